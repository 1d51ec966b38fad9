package org.sparseflow.ops.fused;

import org.sparseflow.ops.matmul.VectorSupport;

/**
 * Layer normalisation over the last axis of rows {@code [nR][nC]} held in Java arrays: {@code y = g
 * o (x - mean) / sqrt(var + eps) + b} with the biased variance per row (Ba, Kiros and Hinton, arXiv
 * 1607.06450), and its backward pass {@code dx = inv / n (n dxhat - sum(dxhat) - xhat sum(dxhat o
 * xhat))}, {@code dxhat = dy o g}, with the gain and bias gradients accumulated in the same pass.
 * Shared by the DL4J layer-norm layer and the fused SameDiff layer-norm op.
 *
 * <p>A row whose variance plus eps is 0 (a constant row with eps = 0) gets {@code 1/sigma = 0}, so
 * its output is the bias and its input gradient 0, as ND4J's {@code layer_norm} (which divides 0 by
 * 0 and replaces the NaNs by 0). The float loops run as Vector API loops when the vector module is
 * present and the row length is a multiple of the vector length.
 */
public final class RowNorm {
  /**
   * Whether the float loops run as JDK Vector API loops ({@link RowNormVector}; rows whose length
   * is a multiple of the vector length): the vector module is present and not switched off.
   */
  static final boolean VECTOR = VectorSupport.AVAILABLE;

  private RowNorm() {}

  private static boolean vector(int nC) {
    return VECTOR && RowNormVector.applies(nC);
  }

  /** 1 / sqrt(v), or 0 when v is not positive. */
  private static double inverseSigma(double v) {
    return v > 0 ? 1.0 / Math.sqrt(v) : 0.0;
  }

  /** Mean of the nC values of the row at offset o. */
  private static double rowMean(double[] x, int o, int nC) {
    double s = 0;
    for (int c = 0; c < nC; c++) {
      s += x[o + c];
    }
    return s / nC;
  }

  /** Biased variance of the nC values of the row at offset o about its mean m. */
  private static double rowVariance(double[] x, int o, int nC, double m) {
    double v = 0;
    for (int c = 0; c < nC; c++) {
      double d = x[o + c] - m;
      v += d * d;
    }
    return v / nC;
  }

  /** xhat of every row into {@code xh} and 1/sigma per row into {@code inv}; x is unchanged. */
  public static void normalizeFloatRows(
      float[] x, float[] xh, float[] inv, double eps, int nR, int nC) {
    if (vector(nC)) {
      RowNormVector.forwardRows(x, xh, inv, null, null, eps, nR, nC);
      return;
    }
    for (int r = 0; r < nR; r++) {
      normalizeRow(x, xh, inv, eps, r, nC);
    }
  }

  private static void normalizeRow(float[] x, float[] xh, float[] inv, double eps, int r, int nC) {
    int o = r * nC;
    float m = sumDeviations(x, o, nC, 0f, false) / nC;
    float iv = (float) inverseSigma(sumDeviations(x, o, nC, m, true) / nC + eps);
    inv[r] = iv;
    for (int c = 0; c < nC; c++) {
      xh[o + c] = (x[o + c] - m) * iv;
    }
  }

  /**
   * Float rows forward: y in place of x, xhat into {@code xh} and 1/sigma per row into {@code inv}
   * (kept for {@link #backwardFloatRows}).
   */
  public static void forwardFloatRows(
      float[] x, float[] xh, float[] inv, float[] g, float[] bb, double eps, int nR, int nC) {
    if (vector(nC)) {
      RowNormVector.forwardRows(x, xh, inv, g, bb, eps, nR, nC);
      return;
    }
    for (int r = 0; r < nR; r++) {
      normalizeRow(x, xh, inv, eps, r, nC);
      int o = r * nC;
      for (int c = 0; c < nC; c++) {
        x[o + c] = g[c] * xh[o + c] + bb[c]; // y, in place of x
      }
    }
  }

  /**
   * Float rows backward from the forward state (xhat, 1/sigma): dx in place of dy; dg and db
   * accumulate per feature.
   */
  public static void backwardFloatRows(
      float[] dy, float[] xh, float[] inv, float[] g, double[] dg, double[] db, int nR, int nC) {
    if (vector(nC)) {
      RowNormVector.backwardRows(dy, xh, inv, g, dg, db, nR, nC);
      return;
    }
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
  }

  /** Double rows forward into {@code y} (x unchanged). */
  public static void forwardDoubleRows(
      double[] x, double[] y, double[] g, double[] bb, double eps, int nR, int nC) {
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      double m = rowMean(x, o, nC);
      double iv = inverseSigma(rowVariance(x, o, nC, m) + eps);
      for (int c = 0; c < nC; c++) {
        y[o + c] = g[c] * (x[o + c] - m) * iv + bb[c];
      }
    }
  }

  /**
   * Double rows backward from the input (statistics recomputed per row while it is in cache): dx
   * into {@code dx}; dg and db accumulate per feature.
   */
  public static void backwardDoubleRows(
      double[] x,
      double[] dy,
      double[] g,
      double eps,
      double[] dx,
      double[] dg,
      double[] db,
      int nR,
      int nC) {
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      double m = rowMean(x, o, nC);
      double iv = inverseSigma(rowVariance(x, o, nC, m) + eps), sumD = 0, sumDX = 0;
      for (int c = 0; c < nC; c++) {
        double d = dy[o + c], xhat = (x[o + c] - m) * iv;
        dg[c] += d * xhat;
        db[c] += d;
        double dxhat = d * g[c];
        sumD += dxhat;
        sumDX += dxhat * xhat;
      }
      double k = iv / nC;
      for (int c = 0; c < nC; c++) {
        double xhat = (x[o + c] - m) * iv;
        dx[o + c] = k * (nC * dy[o + c] * g[c] - sumD - xhat * sumDX);
      }
    }
  }

  // Row reductions with four independent accumulators: a single running sum is one dependent add
  // per element (the JIT keeps floating-point sums in order and does not vectorise them), four
  // chains run in parallel.

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
}
