package org.sparseflow.ops.matmul;

/**
 * Dispatch over the strided register-blocked fp32 micro-kernels ({@code StridedMicroKernels},
 * generated at build time, see {@link VectorMicroKernel}): for rows r of a small tile of C and
 * columns {@code 0 .. nv * L},
 *
 * <pre>
 * C[cOff + r cRs + col] += sum_s a[aOff + r aRs + idx[s]] b[bOff + s bSs + col]
 * </pre>
 *
 * <p>The input gradient dx = dy W^T runs on them: its A is the row-major dy tile, which the weight
 * gradient also reads, so it is not transposed for the unit-stride kernels.
 */
final class StridedKernels {

  static final int L = VectorMicroKernel.L;

  private StridedKernels() {}

  /** Runs the widest micro-kernel over the rows, then single rows for the remainder. */
  static void rows(
      int rows,
      int nv,
      float[] a,
      int aOff,
      int aRs,
      int[] idx,
      int n,
      float[] b,
      int bOff,
      int bSs,
      float[] c,
      int cOff,
      int cRs) {
    int r = 0;
    if (nv == 2) {
      int step = L >= 16 ? 8 : 4;
      for (; r + step <= rows; r += step) {
        if (step == 8) {
          StridedMicroKernels.rows8x2(
              a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
        } else {
          StridedMicroKernels.rows4x2(
              a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
        }
      }
      for (; r < rows; r++) {
        StridedMicroKernels.rows1x2(
            a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    } else {
      int step = L >= 16 ? 16 : 8;
      for (; r + step <= rows; r += step) {
        if (step == 16) {
          StridedMicroKernels.rows16x1(
              a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
        } else {
          StridedMicroKernels.rows8x1(
              a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
        }
      }
      for (; r < rows; r++) {
        StridedMicroKernels.rows1x1(
            a, aOff + r * aRs, aRs, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    }
  }
}
