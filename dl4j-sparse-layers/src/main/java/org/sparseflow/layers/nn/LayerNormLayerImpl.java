package org.sparseflow.layers.nn;

import java.util.Arrays;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.layers.nn.LayerNormKernels.View;
import org.sparseflow.ops.fused.RowNorm;

/**
 * Implementation of {@link LayerNormLayer}: the DL4J glue (input checks, workspaces, gradients, the
 * forward state kept for the backward pass); the loops are in {@link LayerNormKernels}.
 */
public class LayerNormLayerImpl extends SparseFlowLayerImpl<LayerNormLayer> {
  private static final long serialVersionUID = 1L;

  public LayerNormLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  private boolean nwc() {
    return layerConf().getDataFormat() == RNNFormat.NWC;
  }

  private View checkedInput() {
    long n = layerConf().getNIn();
    if ((input.rank() != 2 && input.rank() != 3)
        || input.size(input.rank() == 3 && nwc() ? 2 : 1) != n) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerConf().getLayerName())
              + "input shape = "
              + Arrays.toString(input.shape())
              + " is not allowed; allowed: [minibatch, "
              + n
              + "] or "
              + (nwc() ? "[minibatch, T, " + n + "] (NWC)" : "[minibatch, " + n + ", T] (NCW)"));
    }
    return LayerNormKernels.load(input, 0, nwc());
  }

  /*
   * Float rows fast path (NWC [B, T, n] or [N, n], contiguous, FLOAT: the gpt-mini training case).
   * The forward pass
   * works on the floats directly and keeps xhat and 1/sigma per row for the backward pass
   * (ForwardCache), which then
   * reads only the epsilon: no second statistics pass, no float -> double copies. Other layouts and
   * DOUBLE take the
   * general path below (the gradient checks run there; the tests hold the two paths equal).
   */
  private record RowState(float[] xhat, float[] inv) {}

  private final ForwardCache<RowState> rowCache = new ForwardCache<>();
  private float[] xhatBuffer = new float[0];
  private float[] invBuffer = new float[0];

  /** Whether {@code a} is FLOAT rows in canonical ('c', contiguous) order with n features last. */
  private boolean floatRows(INDArray a) {
    if (dataType != DataType.FLOAT
        || a.dataType() != DataType.FLOAT
        || (a.rank() != 2 && !(a.rank() == 3 && nwc()))) {
      return false;
    }
    long[] st = a.stride();
    long n = a.size(a.rank() - 1);
    return n == layerConf().getNIn()
        && st[a.rank() - 1] == 1
        && st[a.rank() - 2] == n
        && (a.rank() == 2 || a.size(0) == 1 || st[0] == n * a.size(1));
  }

  private INDArray activateFloatRows(boolean training, LayerWorkspaceMgr mgr) {
    int nC = (int) layerConf().getNIn(), n = (int) input.length(), nR = n / nC;
    float[] x = LayerNormKernels.read(input, LayerNormKernels.floats(1, n));
    if (xhatBuffer.length < n) {
      xhatBuffer = new float[n];
    }
    if (invBuffer.length < nR) {
      invBuffer = new float[nR];
    }
    float[] g = getParam("g").toFloatVector(), bb = getParam("b").toFloatVector();
    RowNorm.forwardFloatRows(x, xhatBuffer, invBuffer, g, bb, layerConf().getEps(), nR, nC);
    if (training) {
      rowCache.put(input, new RowState(xhatBuffer, invBuffer));
    }
    return mgr.leverageTo(ArrayType.ACTIVATIONS, LayerNormKernels.write(x, input.shape()));
  }

  private Pair<Gradient, INDArray> backpropFloatRows(
      RowState st, INDArray epsilon, LayerWorkspaceMgr mgr) {
    int nC = (int) layerConf().getNIn(), n = (int) input.length(), nR = n / nC;
    float[] dy = LayerNormKernels.read(epsilon, LayerNormKernels.floats(1, n));
    double[] dg = new double[nC], db = new double[nC];
    RowNorm.backwardFloatRows(
        dy, st.xhat(), st.inv(), getParam("g").toFloatVector(), dg, db, nR, nC);
    return gradients(dg, db, LayerNormKernels.write(dy, input.shape()), mgr);
  }

  @Override
  public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
    assertInputSet(false);
    rowCache.clear();
    if (floatRows(input)) {
      return activateFloatRows(training, mgr);
    }
    View x = checkedInput();
    double eps = layerConf().getEps();
    double[] g = getParam("g").toDoubleVector(), bb = getParam("b").toDoubleVector();
    double[] y = LayerNormKernels.buffer(2, x.rowCount() * x.nC());
    if (x.rows()) {
      RowNorm.forwardDoubleRows(x.data(), y, g, bb, eps, x.rowCount(), x.nC());
    } else {
      double[] mean = new double[x.rowCount()], inv = new double[x.rowCount()];
      LayerNormKernels.statsNcw(x, mean, inv, eps);
      LayerNormKernels.forwardNcw(x, mean, inv, g, bb, y);
    }
    return mgr.leverageTo(ArrayType.ACTIVATIONS, create(y));
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
    assertInputSet(true);
    RowState st = rowCache.take(input);
    if (!Arrays.equals(epsilon.shape(), input.shape())) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerConf().getLayerName())
              + "epsilon shape = "
              + Arrays.toString(epsilon.shape())
              + " is not allowed; allowed: the input shape "
              + Arrays.toString(input.shape()));
    }
    if (st != null && floatRows(epsilon)) {
      return backpropFloatRows(st, epsilon, mgr);
    }
    View x = checkedInput();
    View dy = LayerNormKernels.load(epsilon, 1, nwc());
    int nB = x.nB(), nC = x.nC(), nT = x.nT();
    double eps = layerConf().getEps();
    double[] g = getParam("g").toDoubleVector();
    double[] dg = new double[nC], db = new double[nC];
    // dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat o xhat)), dxhat = dy o g, sums over
    // features
    double[] dx = LayerNormKernels.buffer(2, nB * nC * nT);
    if (x.rows()) {
      RowNorm.backwardDoubleRows(x.data(), dy.data(), g, eps, dx, dg, db, x.rowCount(), nC);
    } else {
      double[] mean = new double[nB * nT], inv = new double[nB * nT];
      LayerNormKernels.statsNcw(x, mean, inv, eps);
      LayerNormKernels.backwardNcw(x, dy, mean, inv, g, dg, db, dx);
    }
    return gradients(dg, db, create(dx), mgr);
  }

  /** New array shaped and typed as the input holding {@code values} in canonical order. */
  private INDArray create(double[] values) {
    return LayerNormKernels.create(values, dataType, input.shape());
  }

  private Pair<Gradient, INDArray> gradients(
      double[] dg, double[] db, INDArray dx, LayerWorkspaceMgr mgr) {
    gradientViews
        .get("g")
        .assign(Nd4j.createFromArray(dg).castTo(dataType).reshape(gradientViews.get("g").shape()));
    gradientViews
        .get("b")
        .assign(Nd4j.createFromArray(db).castTo(dataType).reshape(gradientViews.get("b").shape()));
    Gradient grad = new DefaultGradient();
    grad.gradientForVariable().put("g", gradientViews.get("g"));
    grad.gradientForVariable().put("b", gradientViews.get("b"));
    return new Pair<>(grad, mgr.leverageTo(ArrayType.ACTIVATION_GRAD, dx));
  }
}
