package org.sparseflow.ops.attention;

/**
 * The extra keys of strided patterns ({@code strided:s}), per residue class {@code r, r+s, ...}:
 * their scores and output in the forward pass and their gradients in the backward pass, plus the
 * small vector helpers they use.
 */
final class StridedAttention {
  private StridedAttention() {}

  /** Number of positions r, r+s, r+2s, ... below T. */
  static int residueLength(int seqLen, int stride, int residue) {
    return residue >= seqLen ? 0 : (seqLen - 1 - residue) / stride + 1;
  }

  /**
   * Strided extra keys, one residue class at a time: positions r, r+s, r+2s, ... form a sequence on
   * which the strided pattern is dense causal attention, so its scores are one GEMM with leading
   * dimension s*D (Sparse Transformer's strided attention; Child et al. 2019). Pairs already inside
   * kept tiles (or owned by an earlier stride) are set to -inf. Result: scores[si][row * n + c] for
   * key r + c*s of query row.
   */
  static void strideScores(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      AttentionOperands o,
      double[][] scores) {
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      double[] out = scores[si];
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          long first = (base + r) * d;
          residueProducts(blas, n, d, scale, o.qAddr, o.kAddr, first, st * d, sc.at(0));
          double[] s = sc.read(n * n);
          for (int a = 0; a < n; a++) {
            storeRow(
                layout, head, si, st, r, a, s, a * n, out, (int) (base + r + a * st) * nMax, nMax);
          }
        }
      }
    }
  }

  /**
   * Row {@code a} of residue class {@code r} into the stored scores: {@code out[outOff + c] =
   * s[sOff + c]} (scaled scores) where key {@code r + c st} is a strided extra key of query {@code
   * r + a st}, -inf for the other {@code nMax} columns.
   */
  static void storeRow(
      BlockLayout layout,
      int head,
      int si,
      int st,
      int r,
      int a,
      double[] s,
      int sOff,
      double[] out,
      int outOff,
      int nMax) {
    int i = r + a * st;
    for (int c = 0; c < nMax; c++) {
      out[outOff + c] =
          c < a && layout.isStrideExtra(head, si, i, r + c * st)
              ? s[sOff + c]
              : Double.NEGATIVE_INFINITY;
    }
  }

  /**
   * O += P V over the strided extra keys, per residue class (after the row log-sum-exp is final).
   */
  static void strideOutput(
      AttentionGeometry g,
      BlockLayout layout,
      int bh,
      AttentionOperands o,
      long outAddr,
      double[] lseAll,
      double[][] scores) {
    final int d = g.headDim;
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          double[] p = new double[n * n];
          boolean any = false;
          for (int a = 0; a < n; a++) {
            int row = (int) (base + r + a * st);
            for (int c = 0; c < a; c++) {
              double sv = scores[si][row * nMax + c];
              if (sv != Double.NEGATIVE_INFINITY) {
                p[a * n + c] = Math.exp(sv - lseAll[row]);
                any = true;
              }
            }
          }
          if (!any) {
            continue;
          }
          sc.write(p, n * n);
          long first = (base + r) * d;
          residueAccumulate(blas, false, n, d, 1.0, sc.at(0), o.vAddr, outAddr, first, st * d);
        }
      }
    }
  }

  /**
   * Backward of the strided extra keys of one (batch, head), per residue class with GEMMs
   * (accumulates).
   */
  static void strideBackward(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      AttentionOperands o,
      long doAddr,
      double[] lseAll,
      double[] oa,
      double[] doa,
      long[] gradAddr) {
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax);
          NativeGemm.Scratch dsc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          if (n < 2) {
            continue;
          }
          long first = (base + r) * d;
          int ld = st * d;
          residueProducts(blas, n, d, scale, o.qAddr, o.kAddr, first, ld, sc.at(0));
          residueProducts(blas, n, d, 1.0, doAddr, o.vAddr, first, ld, dsc.at(0));
          double[] p = sc.read(n * n);
          double[] ds = dsc.read(n * n);
          boolean any = false;
          for (int a = 0; a < n; a++) {
            int i = r + a * st;
            int row = (int) (base + i);
            double di = dot(doa, row * d, oa, row * d, d);
            for (int c = 0; c < n; c++) {
              int idx = a * n + c;
              if (c < a && layout.isStrideExtra(head, si, i, r + c * st)) {
                double pv = Math.exp(p[idx] - lseAll[row]);
                p[idx] = pv;
                ds[idx] = pv * (ds[idx] - di);
                any = true;
              } else {
                p[idx] = 0;
                ds[idx] = 0;
              }
            }
          }
          if (!any) {
            continue;
          }
          sc.write(p, n * n);
          dsc.write(ds, n * n);
          // dQ_r += scale dS K_r ; dK_r += scale dS^T Q_r ; dV_r += P^T dO_r
          residueAccumulate(blas, false, n, d, scale, dsc.at(0), o.kAddr, gradAddr[0], first, ld);
          residueAccumulate(blas, true, n, d, scale, dsc.at(0), o.qAddr, gradAddr[1], first, ld);
          residueAccumulate(blas, true, n, d, 1.0, sc.at(0), doAddr, gradAddr[2], first, ld);
        }
      }
    }
  }

  /**
   * {@code dst[n x n] = alpha X_r Y_r^T}: the products of the n rows of one residue class of X and
   * Y (row r + a*s at {@code first + a*ld}).
   */
  private static void residueProducts(
      NativeGemm blas, int n, int d, double alpha, long x, long y, long first, int ld, long dst) {
    blas.gemm(
        false, true, n, n, d, alpha, blas.at(x, first), ld, blas.at(y, first), ld, 0.0, dst, n);
  }

  /**
   * {@code C_r += alpha op(S) Y_r} for one residue class: S [n x n] (transposed if {@code transS}),
   * Y_r and C_r the class's n rows (at {@code first + a*ld}) of Y and C.
   */
  private static void residueAccumulate(
      NativeGemm blas,
      boolean transS,
      int n,
      int d,
      double alpha,
      long s,
      long y,
      long c,
      long first,
      int ld) {
    blas.gemm(
        transS, false, n, d, n, alpha, s, n, blas.at(y, first), ld, 1.0, blas.at(c, first), ld);
  }

  /** Dot product of a[ao..ao+n) and b[bo..bo+n) with four independent accumulators. */
  static double dot(double[] a, int ao, double[] b, int bo, int n) {
    double s0 = 0;
    double s1 = 0;
    double s2 = 0;
    double s3 = 0;
    int x = 0;
    for (; x + 3 < n; x += 4) {
      s0 += a[ao + x] * b[bo + x];
      s1 += a[ao + x + 1] * b[bo + x + 1];
      s2 += a[ao + x + 2] * b[bo + x + 2];
      s3 += a[ao + x + 3] * b[bo + x + 3];
    }
    for (; x < n; x++) {
      s0 += a[ao + x] * b[bo + x];
    }
    return (s0 + s1) + (s2 + s3);
  }

  /** y[yo..yo+n) += alpha * x[xo..xo+n). */
  static void axpy(double alpha, double[] x, int xo, double[] y, int yo, int n) {
    for (int i = 0; i < n; i++) {
      y[yo + i] += alpha * x[xo + i];
    }
  }
}
