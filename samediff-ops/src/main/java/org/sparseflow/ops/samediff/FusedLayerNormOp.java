package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.fused.HostArrays;
import org.sparseflow.ops.fused.RowNorm;

/**
 * SameDiff op {@value #OP_NAME}: layer normalisation over the last axis, {@code y = g o (x - mean)
 * / sqrt(var + eps) + b} (biased variance per row), as one Java kernel ({@link RowNorm}). Inputs: x
 * (FLOAT or DOUBLE, rank >= 1), gain g [n] and bias b [n] with n = the last dimension of x. iArgs:
 * [eps as the bits of a double, the last axis's index or -1 (checked at run time)] (iArgs survive
 * FlatBuffers save/load and gradient cloning). With eps = 0 it computes what ND4J's {@code
 * layer_norm} over the last axis computes. Gradient: {@link FusedLayerNormBpOp}.
 */
@AutoService(JavaKernelOp.class)
public class FusedLayerNormOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_layer_norm";
  private static final Spec SPEC = new Spec(OP_NAME, 1);

  static {
    SparseFlowOps.registerAll();
  }

  public FusedLayerNormOp() {}

  public FusedLayerNormOp(SameDiff sd, SDVariable x, SDVariable g, SDVariable b, double eps) {
    this(sd, x, g, b, eps, -1);
  }

  /**
   * As above, recording {@code axis}, the index of x's last axis (-1 when not known statically),
   * for {@code Sparsify.densify}, which turns the op back into ND4J's {@code layer_norm} over it.
   */
  public FusedLayerNormOp(
      SameDiff sd, SDVariable x, SDVariable g, SDVariable b, double eps, int axis) {
    super(sd, new SDVariable[] {x, g, b});
    addIArgument(Double.doubleToLongBits(checkEps(eps)), axis);
  }

  static double checkEps(double eps) {
    if (!(eps >= 0) || Double.isInfinite(eps)) {
      throw new IllegalArgumentException(
          "eps = " + eps + " is not allowed; allowed: a finite number >= 0");
    }
    return eps;
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  /** The epsilon added to the variance. */
  public double eps() {
    return Double.longBitsToDouble(iArg(0, 0L));
  }

  /** Index of x's last axis as recorded at construction, or -1 when unknown. */
  public int axis() {
    return (int) iArg(1, -1);
  }

  /** Checks x, g and b of a layer norm over the last axis; returns n (the normalised dimension). */
  static int checkInputs(String op, INDArray x, INDArray g, INDArray b) {
    if (x.dataType() != DataType.FLOAT && x.dataType() != DataType.DOUBLE) {
      throw new IllegalArgumentException(
          op + ": x data type = " + x.dataType() + " is not allowed; allowed: FLOAT, DOUBLE");
    }
    if (x.rank() < 1 || x.length() == 0) {
      throw new IllegalArgumentException(
          op + ": x shape = " + Arrays.toString(x.shape()) + "; allowed: rank >= 1, non-empty");
    }
    long n = x.size(x.rank() - 1);
    for (INDArray p : b == null ? new INDArray[] {g} : new INDArray[] {g, b}) {
      if (p.length() != n || p.dataType() != x.dataType()) {
        throw new IllegalArgumentException(
            op
                + ": gain/bias shape = "
                + Arrays.toString(p.shape())
                + " type "
                + p.dataType()
                + " is not allowed; allowed: "
                + n
                + " elements (the last dimension of x "
                + Arrays.toString(x.shape())
                + ") of type "
                + x.dataType());
      }
    }
    return (int) n;
  }

  /** The recorded axis, when there is one, must be x's last axis. */
  private void checkAxis(INDArray x) {
    int axis = axis();
    if (axis >= 0 && axis != x.rank() - 1) {
      throw new IllegalArgumentException(
          OP_NAME
              + " '"
              + getOwnName()
              + "' normalises axis "
              + axis
              + ", which must be the last axis of x; x shape = "
              + Arrays.toString(x.shape())
              + " (allowed: rank "
              + (axis + 1)
              + ")");
    }
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    INDArray x = inputs.get(0);
    checkInputs(OP_NAME, x, inputs.get(1), inputs.get(2));
    checkAxis(x);
    return list(shapeOf(x.shape(), x.dataType()));
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    INDArray x = inputs.get(0), g = inputs.get(1), b = inputs.get(2), y = outputs.get(0);
    int nC = checkInputs(OP_NAME, x, g, b);
    checkAxis(x);
    int n = (int) x.length(), nR = n / nC;
    if (x.dataType() == DataType.FLOAT) {
      float[] xv = HostArrays.readFloats(x, 0);
      RowNorm.forwardFloatRows(
          xv,
          HostArrays.floats(1, n),
          HostArrays.floats(2, nR),
          g.toFloatVector(),
          b.toFloatVector(),
          eps(),
          nR,
          nC);
      HostArrays.write(xv, y);
    } else {
      double[] xv = HostArrays.readDoubles(x, 0), yv = HostArrays.doubles(1, n);
      RowNorm.forwardDoubleRows(xv, yv, g.toDoubleVector(), b.toDoubleVector(), eps(), nR, nC);
      HostArrays.write(yv, y);
    }
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    SDVariable[] a = args();
    return Arrays.asList(
        new FusedLayerNormBpOp(sameDiff, a[0], a[1], grads.get(0), eps()).outputVariables());
  }
}
