package org.sparseflow.layers.nn;

import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.layers.BaseLayer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;

/** Implementation of {@link LayerNormLayer}. */
public class LayerNormLayerImpl extends BaseLayer<LayerNormLayer> {

  public LayerNormLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  /*
   * Fused kernel: one pass over the input in whatever order and strides DL4J hands over (NCW activations arrive
   * 'c' or 'f', or as permuted views), statistics per (example, time step) over the n features. An earlier
   * version built this from ND4J ops (permute + dup to rows, mean, sub, mul, mean, pow, ...), about a dozen
   * full-size temporaries per call; on the gpt-mini step those copies were ~14% of a block-sparse training step.
   */

  /**
   * The elements of the input as doubles in a canonical order, so every kernel loop below runs over
   * contiguous memory and the JIT can vectorise it: NCW [B, n, T] as [b][c][t] (t fastest; {@code
   * rows = false}), and rows [N, n] or NWC [B, T, n] as [b][t][c] (features fastest; {@code rows =
   * true}, N = nB * nT).
   */
  private record View(double[] data, int nB, int nC, int nT, boolean rows) {
    int rowCount() {
      return nB * nT;
    }
  }

  // Per-thread buffers, reused across calls: the arrays are 1-2 MB at gpt-mini size, and fresh ones
  // per call were
  // G1 "humongous" allocations (a young GC every ~0.5 s in a training loop).
  private static final ThreadLocal<double[][]> BUFFERS =
      ThreadLocal.withInitial(() -> new double[4][0]);
  private static final ThreadLocal<float[][]> FLOATS =
      ThreadLocal.withInitial(() -> new float[2][0]);

  private static double[] buffer(int slot, int n) {
    double[][] b = BUFFERS.get();
    if (b[slot].length < n) {
      b[slot] = new double[n];
    }
    return b[slot];
  }

  private static float[] floats(int n) {
    return floats(0, n);
  }

  private static float[] floats(int slot, int n) {
    float[][] f = FLOATS.get();
    if (f[slot].length < n) {
      f[slot] = new float[n];
    }
    return f[slot];
  }

  /**
   * The elements of {@code a} (any order, strides, view offset) copied in canonical order into
   * buffer {@code slot}.
   */
  private static View load(INDArray a, int slot, boolean nwc) {
    if (a.dataType() != DataType.DOUBLE && a.dataType() != DataType.FLOAT) {
      return load(a.castTo(DataType.FLOAT), slot, nwc);
    }
    long[] st = a.stride();
    boolean r3 = a.rank() == 3;
    boolean rows = !r3 || nwc;
    int nB = (int) a.size(0);
    // (b, c, t) sizes and strides whatever the layout: rank 2 is [N, n] with T = 1, NWC is [B, T,
    // n]
    int nC = (int) a.size(rows && r3 ? 2 : 1), nT = r3 ? (int) a.size(rows ? 1 : 2) : 1;
    int sB = (int) st[0], sC = (int) st[rows && r3 ? 2 : 1], sT = r3 ? (int) st[rows ? 1 : 2] : 0;
    int n = nB * nC * nT;
    int span = 1 + (nB - 1) * sB + (nC - 1) * sC + (nT - 1) * sT;
    double[] d = buffer(slot, n);
    long addr = NativeAddress.of(a);
    boolean canonical =
        rows
            ? sC == 1 && (nT == 1 || sT == nC) && (nB == 1 || sB == nC * nT)
            : sT == 1 && sC == nT && (nB == 1 || sB == nC * nT);
    if (a.dataType() == DataType.DOUBLE) {
      if (canonical) {
        new DoublePointer() {
          {
            address = addr;
          }
        }.get(d, 0, n);
        return new View(d, nB, nC, nT, rows);
      }
      double[] raw = buffer(3, span);
      new DoublePointer() {
        {
          address = addr;
        }
      }.get(raw, 0, span);
      gather(raw, null, d, nB, nC, nT, sB, sC, sT, rows);
    } else {
      float[] f = floats(span);
      new FloatPointer() {
        {
          address = addr;
        }
      }.get(f, 0, span);
      if (canonical) {
        for (int i = 0; i < n; i++) {
          d[i] = f[i];
        }
      } else {
        gather(null, f, d, nB, nC, nT, sB, sC, sT, rows);
      }
    }
    return new View(d, nB, nC, nT, rows);
  }

  /**
   * Strided (double or float) source into canonical doubles: [b][c][t], or [b][t][c] when {@code
   * rows}.
   */
  private static void gather(
      double[] dsrc,
      float[] fsrc,
      double[] out,
      int nB,
      int nC,
      int nT,
      int sB,
      int sC,
      int sT,
      boolean rows) {
    for (int b = 0; b < nB; b++) {
      for (int i = 0; i < (rows ? nT : nC); i++) {
        // inner loop over c (rows) or t (NCW)
        int src = b * sB + (rows ? i * sT : i * sC),
            o = (b * (rows ? nT : nC) + i) * (rows ? nC : nT);
        int len = rows ? nC : nT, step = rows ? sC : sT;
        if (dsrc != null) {
          for (int j = 0; j < len; j++) {
            out[o + j] = dsrc[src + j * step];
          }
        } else {
          for (int j = 0; j < len; j++) {
            out[o + j] = fsrc[src + j * step];
          }
        }
      }
    }
  }

  /**
   * New 'c' array shaped as the input (current workspace) holding {@code values} in the View's
   * canonical order.
   */
  private INDArray create(double[] values) {
    INDArray out = Nd4j.createUninitialized(dataType, input.shape(), 'c');
    int n = (int) out.length();
    long addr = NativeAddress.of(out);
    if (dataType == DataType.DOUBLE) {
      new DoublePointer() {
        {
          address = addr;
        }
      }.put(values, 0, n);
    } else if (dataType == DataType.FLOAT) {
      float[] f = floats(n);
      for (int i = 0; i < n; i++) {
        f[i] = (float) values[i];
      }
      new FloatPointer() {
        {
          address = addr;
        }
      }.put(f, 0, n);
    } else {
      out.assign(
          Nd4j.create(java.util.Arrays.copyOf(values, n), input.shape(), 'c').castTo(dataType));
    }
    return out;
  }

  /** Per-(b, t) mean and 1/sqrt(var + eps) of x over the features: [b * nT + t]. */
  private void stats(View x, double[] mean, double[] inv) {
    if (x.rows) {
      statsRows(x, mean, inv);
      return;
    }
    int nB = x.nB, nC = x.nC, nT = x.nT;
    double[] xd = x.data;
    double eps = layerConf().getEps();
    java.util.Arrays.fill(mean, 0);
    java.util.Arrays.fill(inv, 0);
    for (int b = 0; b < nB; b++) {
      int r = b * nT;
      for (int c = 0; c < nC; c++) {
        int o = (b * nC + c) * nT;
        for (int t = 0; t < nT; t++) {
          mean[r + t] += xd[o + t];
        }
      }
      for (int t = 0; t < nT; t++) {
        mean[r + t] /= nC;
      }
      for (int c = 0; c < nC; c++) {
        int o = (b * nC + c) * nT;
        for (int t = 0; t < nT; t++) {
          double d = xd[o + t] - mean[r + t];
          inv[r + t] += d * d;
        }
      }
      for (int t = 0; t < nT; t++) {
        inv[r + t] = 1.0 / Math.sqrt(inv[r + t] / nC + eps);
      }
    }
  }

  private void statsRows(View x, double[] mean, double[] inv) {
    int nR = x.rowCount(), nC = x.nC;
    double[] xd = x.data;
    double eps = layerConf().getEps();
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      double s = 0;
      for (int c = 0; c < nC; c++) {
        s += xd[o + c];
      }
      double m = s / nC, v = 0;
      for (int c = 0; c < nC; c++) {
        double d = xd[o + c] - m;
        v += d * d;
      }
      mean[r] = m;
      inv[r] = 1.0 / Math.sqrt(v / nC + eps);
    }
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
              + java.util.Arrays.toString(input.shape())
              + " is not allowed; allowed: [minibatch, "
              + n
              + "] or "
              + (nwc() ? "[minibatch, T, " + n + "] (NWC)" : "[minibatch, " + n + ", T] (NCW)"));
    }
    return load(input, 0, nwc());
  }

  /*
   * Float rows fast path (NWC [B, T, n] or [N, n], contiguous, FLOAT: the gpt-mini training case). The forward pass
   * works on the floats directly and keeps xhat and 1/sigma per row for the backward pass (ForwardCache), which then
   * reads only the epsilon: no second statistics pass, no float -> double copies. Other layouts and DOUBLE take the
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

  private static float[] read(INDArray a, float[] into) {
    long addr = NativeAddress.of(a);
    new FloatPointer() {
      {
        address = addr;
      }
    }.get(into, 0, (int) a.length());
    return into;
  }

  private INDArray write(float[] values) {
    INDArray out = Nd4j.createUninitialized(DataType.FLOAT, input.shape(), 'c');
    long addr = NativeAddress.of(out);
    new FloatPointer() {
      {
        address = addr;
      }
    }.put(values, 0, (int) out.length());
    return out;
  }

  private INDArray activateFloatRows(boolean training, LayerWorkspaceMgr mgr) {
    int nC = (int) layerConf().getNIn(), n = (int) input.length(), nR = n / nC;
    float[] x = read(input, floats(1, n));
    if (xhatBuffer.length < n) {
      xhatBuffer = new float[n];
    }
    if (invBuffer.length < nR) {
      invBuffer = new float[nR];
    }
    float[] xh = xhatBuffer, inv = invBuffer;
    float[] g = getParam("g").toFloatVector(), bb = getParam("b").toFloatVector();
    double eps = layerConf().getEps();
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      float m = sumDeviations(x, o, nC, 0f, false) / nC;
      float iv = (float) (1.0 / Math.sqrt(sumDeviations(x, o, nC, m, true) / nC + eps));
      inv[r] = iv;
      for (int c = 0; c < nC; c++) {
        float h = (x[o + c] - m) * iv;
        xh[o + c] = h;
        x[o + c] = g[c] * h + bb[c]; // y, in place of x
      }
    }
    if (training) {
      rowCache.put(input, new RowState(xh, inv));
    }
    return mgr.leverageTo(ArrayType.ACTIVATIONS, write(x));
  }

  /**
   * dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat o xhat)) per row, from the kept
   * forward state.
   */
  private Pair<Gradient, INDArray> backpropFloatRows(
      RowState st, INDArray epsilon, LayerWorkspaceMgr mgr) {
    int nC = (int) layerConf().getNIn(), n = (int) input.length(), nR = n / nC;
    float[] dy = read(epsilon, floats(1, n)), xh = st.xhat(), inv = st.inv();
    float[] g = getParam("g").toFloatVector();
    double[] dg = new double[nC], db = new double[nC];
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      for (int c = 0; c < nC; c++) {
        float d = dy[o + c];
        dg[c] += d * xh[o + c];
        db[c] += d;
      }
      float sumD = dot(dy, g, null, o, nC), sumDX = dot(dy, g, xh, o, nC);
      float k = inv[r] / nC;
      for (int c = 0; c < nC; c++) {
        dy[o + c] = k * (nC * dy[o + c] * g[c] - sumD - xh[o + c] * sumDX); // dx, in place of dy
      }
    }
    return gradients(dg, db, write(dy), mgr);
  }

  // Row reductions with four independent accumulators: a single running sum is one dependent add
  // per element (the
  // JIT keeps floating-point sums in order and does not vectorise them), four chains run in
  // parallel.

  /** sum over c of a[o + c] - m, or of its square. */
  private static float sumDeviations(float[] a, int o, int n, float m, boolean squared) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int c = 0;
    for (; c + 3 < n; c += 4) {
      float d0 = a[o + c] - m, d1 = a[o + c + 1] - m, d2 = a[o + c + 2] - m, d3 = a[o + c + 3] - m;
      s0 += squared ? d0 * d0 : d0;
      s1 += squared ? d1 * d1 : d1;
      s2 += squared ? d2 * d2 : d2;
      s3 += squared ? d3 * d3 : d3;
    }
    for (; c < n; c++) {
      float d = a[o + c] - m;
      s0 += squared ? d * d : d;
    }
    return (s0 + s1) + (s2 + s3);
  }

  /** sum over c of a[o + c] * g[c] (* h[o + c] when h is given). */
  private static float dot(float[] a, float[] g, float[] h, int o, int n) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int c = 0;
    for (; c + 3 < n; c += 4) {
      s0 += a[o + c] * g[c] * (h == null ? 1f : h[o + c]);
      s1 += a[o + c + 1] * g[c + 1] * (h == null ? 1f : h[o + c + 1]);
      s2 += a[o + c + 2] * g[c + 2] * (h == null ? 1f : h[o + c + 2]);
      s3 += a[o + c + 3] * g[c + 3] * (h == null ? 1f : h[o + c + 3]);
    }
    for (; c < n; c++) {
      s0 += a[o + c] * g[c] * (h == null ? 1f : h[o + c]);
    }
    return (s0 + s1) + (s2 + s3);
  }

  @Override
  public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
    assertInputSet(false);
    rowCache.clear();
    if (floatRows(input)) {
      return activateFloatRows(training, mgr);
    }
    View x = checkedInput();
    int nB = x.nB, nC = x.nC, nT = x.nT;
    double[] mean = new double[nB * nT], inv = new double[nB * nT];
    stats(x, mean, inv);
    double[] g = getParam("g").toDoubleVector(), bb = getParam("b").toDoubleVector();
    double[] y = buffer(2, nB * nC * nT);
    double[] xd = x.data;
    if (x.rows) {
      for (int r = 0; r < x.rowCount(); r++) {
        int o = r * nC;
        double m = mean[r], iv = inv[r];
        for (int c = 0; c < nC; c++) {
          y[o + c] = g[c] * (xd[o + c] - m) * iv + bb[c];
        }
      }
      return mgr.leverageTo(ArrayType.ACTIVATIONS, create(y));
    }
    for (int b = 0; b < nB; b++) {
      for (int c = 0; c < nC; c++) {
        int o = (b * nC + c) * nT, r = b * nT;
        double gc = g[c], bc = bb[c];
        for (int t = 0; t < nT; t++) {
          y[o + t] = gc * (xd[o + t] - mean[r + t]) * inv[r + t] + bc;
        }
      }
    }
    return mgr.leverageTo(ArrayType.ACTIVATIONS, create(y));
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
    assertInputSet(true);
    RowState st = rowCache.take(input);
    if (!java.util.Arrays.equals(epsilon.shape(), input.shape())) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerConf().getLayerName())
              + "epsilon shape = "
              + java.util.Arrays.toString(epsilon.shape())
              + " is not allowed; allowed: the input shape "
              + java.util.Arrays.toString(input.shape()));
    }
    if (st != null && floatRows(epsilon)) {
      return backpropFloatRows(st, epsilon, mgr);
    }
    View x = checkedInput();
    View dy = load(epsilon, 1, nwc());
    int nB = x.nB, nC = x.nC, nT = x.nT;
    double[] mean = new double[nB * nT], inv = new double[nB * nT];
    stats(x, mean, inv);
    double[] g = getParam("g").toDoubleVector();
    double[] dg = new double[nC], db = new double[nC];
    // dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat o xhat)), dxhat = dy o g, sums over
    // features
    double[] dx = buffer(2, nB * nC * nT);
    if (x.rows) {
      backwardRows(x, dy, mean, inv, g, dg, db, dx);
    } else {
      backwardNcw(x, dy, mean, inv, g, dg, db, dx);
    }
    return gradients(dg, db, create(dx), mgr);
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

  /**
   * Rows [r][c]: per row, xhat and the two feature sums, then dx; dg and db accumulate across rows
   * per feature.
   */
  private static void backwardRows(
      View x,
      View dy,
      double[] mean,
      double[] inv,
      double[] g,
      double[] dg,
      double[] db,
      double[] dx) {
    int nR = x.rowCount(), nC = x.nC;
    double[] xd = x.data, dyd = dy.data;
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      double m = mean[r], iv = inv[r], sumD = 0, sumDX = 0;
      for (int c = 0; c < nC; c++) {
        double d = dyd[o + c], xhat = (xd[o + c] - m) * iv;
        xd[o + c] = xhat;
        dg[c] += d * xhat;
        db[c] += d;
        double dxhat = d * g[c];
        sumD += dxhat;
        sumDX += dxhat * xhat;
      }
      double k = iv / nC;
      for (int c = 0; c < nC; c++) {
        dx[o + c] = k * (nC * dyd[o + c] * g[c] - sumD - xd[o + c] * sumDX);
      }
    }
  }

  /**
   * NCW [b][c][t]: loops over t innermost (contiguous). Pass 1 stores xhat in place of x and the
   * per-feature partial sums per t (vectorisable, no scalar reduction in the inner loop); pass 2
   * writes dx.
   */
  private static void backwardNcw(
      View x,
      View dy,
      double[] mean,
      double[] inv,
      double[] g,
      double[] dg,
      double[] db,
      double[] dx) {
    int nB = x.nB, nC = x.nC, nT = x.nT;
    double[] sumD = new double[nB * nT], sumDX = new double[nB * nT];
    double[] accG = new double[nT], accB = new double[nT];
    double[] xd = x.data, dyd = dy.data;
    for (int c = 0; c < nC; c++) {
      java.util.Arrays.fill(accG, 0);
      java.util.Arrays.fill(accB, 0);
      double gc = g[c];
      for (int b = 0; b < nB; b++) {
        int r = b * nT, o = (b * nC + c) * nT;
        for (int t = 0; t < nT; t++) {
          double d = dyd[o + t];
          double xhat = (xd[o + t] - mean[r + t]) * inv[r + t];
          xd[o + t] = xhat;
          accG[t] += d * xhat;
          accB[t] += d;
          double dxhat = d * gc;
          sumD[r + t] += dxhat;
          sumDX[r + t] += dxhat * xhat;
        }
      }
      double sg = 0, sb = 0;
      for (int t = 0; t < nT; t++) {
        sg += accG[t];
        sb += accB[t];
      }
      dg[c] = sg;
      db[c] = sb;
    }
    for (int b = 0; b < nB; b++) {
      int r = b * nT;
      for (int c = 0; c < nC; c++) {
        int o = (b * nC + c) * nT;
        double gc = g[c];
        for (int t = 0; t < nT; t++) {
          dx[o + t] =
              inv[r + t] / nC * (nC * dyd[o + t] * gc - sumD[r + t] - xd[o + t] * sumDX[r + t]);
        }
      }
    }
  }

  @Override
  public boolean isPretrainLayer() {
    return false;
  }

  @Override
  public boolean hasBias() {
    return true;
  }
}
