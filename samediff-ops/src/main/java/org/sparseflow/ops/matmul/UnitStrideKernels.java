package org.sparseflow.ops.matmul;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Register-blocked fp32 micro-kernels for an A operand whose rows are adjacent in memory
 * (generated, unrolled by hand like {@link VectorMicroKernel}). Each computes, for rows r of a
 * small tile of C and columns {@code 0 .. nv * L},
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

  static final VectorSpecies<Float> SP = VectorMicroKernel.SP;

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
        rows12x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; L >= 16 && r + 8 <= rows; r += 8) {
        rows8x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        rows4x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        rows1x2(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    } else {
      for (; L >= 16 && r + 16 <= rows; r += 16) {
        UnitStrideNarrowKernels.rows16x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 8 <= rows; r += 8) {
        UnitStrideNarrowKernels.rows8x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r + 4 <= rows; r += 4) {
        UnitStrideNarrowKernels.rows4x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
      for (; r < rows; r++) {
        UnitStrideNarrowKernels.rows1x1(a, aOff + r, idx, n, b, bOff, bSs, c, cOff + r * cRs, cRs);
      }
    }
  }

  /** 12 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows12x2(
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
    FloatVector c0_0 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c0_1 = FloatVector.fromArray(SP, c, cOff + L);
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c1_1 = FloatVector.fromArray(SP, c, cOff + 1 * cRs + L);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c2_1 = FloatVector.fromArray(SP, c, cOff + 2 * cRs + L);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c3_1 = FloatVector.fromArray(SP, c, cOff + 3 * cRs + L);
    FloatVector c4_0 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c4_1 = FloatVector.fromArray(SP, c, cOff + 4 * cRs + L);
    FloatVector c5_0 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c5_1 = FloatVector.fromArray(SP, c, cOff + 5 * cRs + L);
    FloatVector c6_0 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c6_1 = FloatVector.fromArray(SP, c, cOff + 6 * cRs + L);
    FloatVector c7_0 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    FloatVector c7_1 = FloatVector.fromArray(SP, c, cOff + 7 * cRs + L);
    FloatVector c8_0 = FloatVector.fromArray(SP, c, cOff + 8 * cRs);
    FloatVector c8_1 = FloatVector.fromArray(SP, c, cOff + 8 * cRs + L);
    FloatVector c9_0 = FloatVector.fromArray(SP, c, cOff + 9 * cRs);
    FloatVector c9_1 = FloatVector.fromArray(SP, c, cOff + 9 * cRs + L);
    FloatVector c10_0 = FloatVector.fromArray(SP, c, cOff + 10 * cRs);
    FloatVector c10_1 = FloatVector.fromArray(SP, c, cOff + 10 * cRs + L);
    FloatVector c11_0 = FloatVector.fromArray(SP, c, cOff + 11 * cRs);
    FloatVector c11_1 = FloatVector.fromArray(SP, c, cOff + 11 * cRs + L);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      c0_1 = x0.fma(w1, c0_1);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      c1_1 = x1.fma(w1, c1_1);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      c2_1 = x2.fma(w1, c2_1);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
      c3_1 = x3.fma(w1, c3_1);
      FloatVector x4 = FloatVector.broadcast(SP, a[k + 4]);
      c4_0 = x4.fma(w0, c4_0);
      c4_1 = x4.fma(w1, c4_1);
      FloatVector x5 = FloatVector.broadcast(SP, a[k + 5]);
      c5_0 = x5.fma(w0, c5_0);
      c5_1 = x5.fma(w1, c5_1);
      FloatVector x6 = FloatVector.broadcast(SP, a[k + 6]);
      c6_0 = x6.fma(w0, c6_0);
      c6_1 = x6.fma(w1, c6_1);
      FloatVector x7 = FloatVector.broadcast(SP, a[k + 7]);
      c7_0 = x7.fma(w0, c7_0);
      c7_1 = x7.fma(w1, c7_1);
      FloatVector x8 = FloatVector.broadcast(SP, a[k + 8]);
      c8_0 = x8.fma(w0, c8_0);
      c8_1 = x8.fma(w1, c8_1);
      FloatVector x9 = FloatVector.broadcast(SP, a[k + 9]);
      c9_0 = x9.fma(w0, c9_0);
      c9_1 = x9.fma(w1, c9_1);
      FloatVector x10 = FloatVector.broadcast(SP, a[k + 10]);
      c10_0 = x10.fma(w0, c10_0);
      c10_1 = x10.fma(w1, c10_1);
      FloatVector x11 = FloatVector.broadcast(SP, a[k + 11]);
      c11_0 = x11.fma(w0, c11_0);
      c11_1 = x11.fma(w1, c11_1);
    }
    c0_0.intoArray(c, cOff);
    c0_1.intoArray(c, cOff + L);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c1_1.intoArray(c, cOff + 1 * cRs + L);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c2_1.intoArray(c, cOff + 2 * cRs + L);
    c3_0.intoArray(c, cOff + 3 * cRs);
    c3_1.intoArray(c, cOff + 3 * cRs + L);
    c4_0.intoArray(c, cOff + 4 * cRs);
    c4_1.intoArray(c, cOff + 4 * cRs + L);
    c5_0.intoArray(c, cOff + 5 * cRs);
    c5_1.intoArray(c, cOff + 5 * cRs + L);
    c6_0.intoArray(c, cOff + 6 * cRs);
    c6_1.intoArray(c, cOff + 6 * cRs + L);
    c7_0.intoArray(c, cOff + 7 * cRs);
    c7_1.intoArray(c, cOff + 7 * cRs + L);
    c8_0.intoArray(c, cOff + 8 * cRs);
    c8_1.intoArray(c, cOff + 8 * cRs + L);
    c9_0.intoArray(c, cOff + 9 * cRs);
    c9_1.intoArray(c, cOff + 9 * cRs + L);
    c10_0.intoArray(c, cOff + 10 * cRs);
    c10_1.intoArray(c, cOff + 10 * cRs + L);
    c11_0.intoArray(c, cOff + 11 * cRs);
    c11_1.intoArray(c, cOff + 11 * cRs + L);
  }

  /** 4 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows4x2(
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
    FloatVector c0_0 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c0_1 = FloatVector.fromArray(SP, c, cOff + L);
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c1_1 = FloatVector.fromArray(SP, c, cOff + 1 * cRs + L);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c2_1 = FloatVector.fromArray(SP, c, cOff + 2 * cRs + L);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c3_1 = FloatVector.fromArray(SP, c, cOff + 3 * cRs + L);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      c0_1 = x0.fma(w1, c0_1);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      c1_1 = x1.fma(w1, c1_1);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      c2_1 = x2.fma(w1, c2_1);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
      c3_1 = x3.fma(w1, c3_1);
    }
    c0_0.intoArray(c, cOff);
    c0_1.intoArray(c, cOff + L);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c1_1.intoArray(c, cOff + 1 * cRs + L);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c2_1.intoArray(c, cOff + 2 * cRs + L);
    c3_0.intoArray(c, cOff + 3 * cRs);
    c3_1.intoArray(c, cOff + 3 * cRs + L);
  }

  /** 1 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows1x2(
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
    FloatVector c0_0 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c0_1 = FloatVector.fromArray(SP, c, cOff + L);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      c0_1 = x0.fma(w1, c0_1);
    }
    c0_0.intoArray(c, cOff);
    c0_1.intoArray(c, cOff + L);
  }

  /** 8 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows8x2(
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
    FloatVector c0_0 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c0_1 = FloatVector.fromArray(SP, c, cOff + L);
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c1_1 = FloatVector.fromArray(SP, c, cOff + 1 * cRs + L);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c2_1 = FloatVector.fromArray(SP, c, cOff + 2 * cRs + L);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c3_1 = FloatVector.fromArray(SP, c, cOff + 3 * cRs + L);
    FloatVector c4_0 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c4_1 = FloatVector.fromArray(SP, c, cOff + 4 * cRs + L);
    FloatVector c5_0 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c5_1 = FloatVector.fromArray(SP, c, cOff + 5 * cRs + L);
    FloatVector c6_0 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c6_1 = FloatVector.fromArray(SP, c, cOff + 6 * cRs + L);
    FloatVector c7_0 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    FloatVector c7_1 = FloatVector.fromArray(SP, c, cOff + 7 * cRs + L);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      c0_1 = x0.fma(w1, c0_1);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      c1_1 = x1.fma(w1, c1_1);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      c2_1 = x2.fma(w1, c2_1);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
      c3_1 = x3.fma(w1, c3_1);
      FloatVector x4 = FloatVector.broadcast(SP, a[k + 4]);
      c4_0 = x4.fma(w0, c4_0);
      c4_1 = x4.fma(w1, c4_1);
      FloatVector x5 = FloatVector.broadcast(SP, a[k + 5]);
      c5_0 = x5.fma(w0, c5_0);
      c5_1 = x5.fma(w1, c5_1);
      FloatVector x6 = FloatVector.broadcast(SP, a[k + 6]);
      c6_0 = x6.fma(w0, c6_0);
      c6_1 = x6.fma(w1, c6_1);
      FloatVector x7 = FloatVector.broadcast(SP, a[k + 7]);
      c7_0 = x7.fma(w0, c7_0);
      c7_1 = x7.fma(w1, c7_1);
    }
    c0_0.intoArray(c, cOff);
    c0_1.intoArray(c, cOff + L);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c1_1.intoArray(c, cOff + 1 * cRs + L);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c2_1.intoArray(c, cOff + 2 * cRs + L);
    c3_0.intoArray(c, cOff + 3 * cRs);
    c3_1.intoArray(c, cOff + 3 * cRs + L);
    c4_0.intoArray(c, cOff + 4 * cRs);
    c4_1.intoArray(c, cOff + 4 * cRs + L);
    c5_0.intoArray(c, cOff + 5 * cRs);
    c5_1.intoArray(c, cOff + 5 * cRs + L);
    c6_0.intoArray(c, cOff + 6 * cRs);
    c6_1.intoArray(c, cOff + 6 * cRs + L);
    c7_0.intoArray(c, cOff + 7 * cRs);
    c7_1.intoArray(c, cOff + 7 * cRs + L);
  }
}
