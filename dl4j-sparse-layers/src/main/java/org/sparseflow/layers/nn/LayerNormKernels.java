package org.sparseflow.layers.nn;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.fused.RowNorm;

/**
 * The kernels of {@link LayerNormLayerImpl}: layer normalisation over the features of rows [N, n],
 * NWC [B, T, n] or NCW [B, n, T] inputs, y = g o (x - mean) / sqrt(var + eps) + b (Ba, Kiros and
 * Hinton, arXiv 1607.06450), and its backward pass, as plain loops over Java arrays.
 */
final class LayerNormKernels {
  private LayerNormKernels() {}

  /*
   * Fused kernel: one pass over the input in whatever order and strides DL4J hands over (NCW
   * activations arrive
   * 'c' or 'f', or as permuted views), statistics per (example, time step) over the n features. An
   * earlier
   * version built this from ND4J ops (permute + dup to rows, mean, sub, mul, mean, pow, ...), about
   * a dozen
   * full-size temporaries per call; on the gpt-mini step those copies were ~14% of a block-sparse
   * training step.
   */

  /**
   * The elements of the input as doubles in a canonical order, so every kernel loop below runs over
   * contiguous memory and the JIT can vectorise it: NCW [B, n, T] as [b][c][t] (t fastest; {@code
   * rows = false}), and rows [N, n] or NWC [B, T, n] as [b][t][c] (features fastest; {@code rows =
   * true}, N = nB * nT).
   */
  record View(double[] data, int nB, int nC, int nT, boolean rows) {
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

  static double[] buffer(int slot, int n) {
    double[][] b = BUFFERS.get();
    if (b[slot].length < n) {
      b[slot] = new double[n];
    }
    return b[slot];
  }

  private static float[] floats(int n) {
    return floats(0, n);
  }

  static float[] floats(int slot, int n) {
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
  static View load(INDArray a, int slot, boolean nwc) {
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
        RawPointers.doubleAt(0, addr).get(d, 0, n);
        return new View(d, nB, nC, nT, rows);
      }
      double[] raw = buffer(3, span);
      RawPointers.doubleAt(0, addr).get(raw, 0, span);
      gather(raw, null, d, nB, nC, nT, sB, sC, sT, rows);
    } else {
      float[] f = floats(span);
      RawPointers.floatAt(0, addr).get(f, 0, span);
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
   * New 'c' array of this type and shape (current workspace) holding {@code values} in the View's
   * canonical order.
   */
  static INDArray create(double[] values, DataType dataType, long[] shape) {
    INDArray out = Nd4j.createUninitialized(dataType, shape, 'c');
    int n = (int) out.length();
    long addr = NativeAddress.of(out);
    if (dataType == DataType.DOUBLE) {
      RawPointers.doubleAt(0, addr).put(values, 0, n);
    } else if (dataType == DataType.FLOAT) {
      float[] f = floats(n);
      for (int i = 0; i < n; i++) {
        f[i] = (float) values[i];
      }
      RawPointers.floatAt(0, addr).put(f, 0, n);
    } else {
      out.assign(Nd4j.create(Arrays.copyOf(values, n), shape, 'c').castTo(dataType));
    }
    return out;
  }

  /**
   * NCW [b][c][t]: per-(b, t) mean and 1/sqrt(var + eps) over the features into {@code [b * nT +
   * t]}, with t innermost (contiguous, vectorisable). Rows layouts go to {@link RowNorm}'s double
   * kernels instead; per (b, t) the arithmetic is the same as theirs.
   */
  static void statsNcw(View x, double[] mean, double[] inv, double eps) {
    int nB = x.nB, nC = x.nC, nT = x.nT;
    double[] xd = x.data;
    Arrays.fill(mean, 0);
    Arrays.fill(inv, 0);
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

  /** NCW [b][c][t]: the forward pass y = g o xhat + b into {@code y}, in the same order. */
  static void forwardNcw(View x, double[] mean, double[] inv, double[] g, double[] bb, double[] y) {
    int nB = x.nB(), nC = x.nC(), nT = x.nT();
    double[] xd = x.data();
    for (int b = 0; b < nB; b++) {
      for (int c = 0; c < nC; c++) {
        int o = (b * nC + c) * nT, r = b * nT;
        double gc = g[c], bc = bb[c];
        for (int t = 0; t < nT; t++) {
          y[o + t] = gc * (xd[o + t] - mean[r + t]) * inv[r + t] + bc;
        }
      }
    }
  }

  /** The elements of a contiguous FLOAT array into {@code into}. */
  static float[] read(INDArray a, float[] into) {
    long addr = NativeAddress.of(a);
    RawPointers.floatAt(0, addr).get(into, 0, (int) a.length());
    return into;
  }

  /** New 'c' FLOAT array of this shape (current workspace) holding {@code values}. */
  static INDArray write(float[] values, long[] shape) {
    INDArray out = Nd4j.createUninitialized(DataType.FLOAT, shape, 'c');
    long addr = NativeAddress.of(out);
    RawPointers.floatAt(0, addr).put(values, 0, (int) out.length());
    return out;
  }

  /**
   * NCW [b][c][t]: loops over t innermost (contiguous). Pass 1 stores xhat in place of x and the
   * per-feature partial sums per t (vectorisable, no scalar reduction in the inner loop); pass 2
   * writes dx.
   */
  static void backwardNcw(
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
      Arrays.fill(accG, 0);
      Arrays.fill(accB, 0);
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
}
