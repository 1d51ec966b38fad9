package org.sparseflow.ops.matmul;

import java.nio.ByteBuffer;

/**
 * Dispatch over the register-blocked fp32 micro-kernels for an A operand whose rows are adjacent in
 * memory ({@code UnitStrideMicroKernels}, generated at build time like the strided ones, see {@link
 * VectorMicroKernel}). Each computes, for rows r of a small tile of C and columns {@code 0 .. nv *
 * L},
 *
 * <pre>
 * C[cOff + r * cRs + col] += sum over s &lt; n of a[aOff + idx[s] + r] * b[bOff + s * bSs + col]
 * </pre>
 *
 * <p>With the row offsets constant (0, 1, 2, ...) instead of multiples of a row stride, the JIT
 * merges the bounds checks of a row group's scalar loads into one and the loads share a cache line;
 * that, and 12 rows x 2 vectors (24 accumulators, which the strided form could not hold without
 * spilling), measured 97 -> 128 GFLOP/s on one AVX-512 core (docs/experiments/kernels.md). A is a
 * token tile stored transposed (forward) or the row-major activation tile read along its columns
 * (weight gradient).
 */
final class UnitStrideKernels {

  /** Lanes per vector: 16 with AVX-512, 8 with AVX2. */
  static final int L = VectorMicroKernel.L;

  private UnitStrideKernels() {}

  /**
   * The widest kernels over {@code rows} rows starting at aOff / cOff (C rows cRs apart), then
   * narrower ones for the remainder; {@code nv} is 2 when the panel is 2 vectors wide, else 1.
   */
  static void rows(
      int rows,
      int nv,
      float[] a,
      int aOff,
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
      // 24 (16) accumulators need AVX-512's 32 vector registers; AVX2 (16 registers) takes 4
      // rows. 12-row groups while at least 20 rows (or exactly 12) remain, then 8: 32 rows are
      // 12 + 12 + 8 and 64 rows 4 x 12 + 2 x 8, not a third of them in 4-row kernels
      for (; L >= 16 && (rows - r >= 20 || rows - r == 12); r += 12) {
        UnitStrideMicroKernels.rows12x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; L >= 16 && r + 8 <= rows; r += 8) {
        UnitStrideMicroKernels.rows8x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        UnitStrideMicroKernels.rows4x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        UnitStrideMicroKernels.rows1x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    } else {
      for (; L >= 16 && r + 16 <= rows; r += 16) {
        UnitStrideMicroKernels.rows16x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 8 <= rows; r += 8) {
        UnitStrideMicroKernels.rows8x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        UnitStrideMicroKernels.rows4x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        UnitStrideMicroKernels.rows1x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    }
  }

  /**
   * As {@link #rows} but C is written, not added to: the storing kernels ({@code
   * UnitStrideStoreMicroKernels}) put each row's result straight into {@code out} (native memory,
   * float index cOff + r * cRs). Returns the sum of the kernels' probes: not 0 when a stored value
   * is NaN or infinite.
   */
  static float rowsStore(
      int rows,
      int nv,
      float[] a,
      int aOff,
      int[] idx,
      int n,
      float[] b,
      int bOff,
      int bSs,
      ByteBuffer out,
      int cOff,
      int cRs) {
    float probe = 0f;
    int r = 0;
    if (nv == 2) {
      for (; L >= 16 && (rows - r >= 20 || rows - r == 12); r += 12) {
        probe +=
            UnitStrideStoreMicroKernels.rows12x2(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; L >= 16 && r + 8 <= rows; r += 8) {
        probe +=
            UnitStrideStoreMicroKernels.rows8x2(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        probe +=
            UnitStrideStoreMicroKernels.rows4x2(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        probe +=
            UnitStrideStoreMicroKernels.rows1x2(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
    } else {
      for (; L >= 16 && r + 16 <= rows; r += 16) {
        probe +=
            UnitStrideStoreMicroKernels.rows16x1(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; r + 8 <= rows; r += 8) {
        probe +=
            UnitStrideStoreMicroKernels.rows8x1(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        probe +=
            UnitStrideStoreMicroKernels.rows4x1(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        probe +=
            UnitStrideStoreMicroKernels.rows1x1(
                a, aOff + r, idx, n, b, bOff, bSs, out, cOff + r * cRs, cRs);
      }
    }
    return probe;
  }
}
