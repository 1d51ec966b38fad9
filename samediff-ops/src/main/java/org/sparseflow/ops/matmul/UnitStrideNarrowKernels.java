package org.sparseflow.ops.matmul;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The one-vector-wide forms of {@link UnitStrideKernels} (panels of one vector, e.g. 16 x 16 blocks
 * with AVX-512); same operands and generated the same way.
 */
final class UnitStrideNarrowKernels {

  static final VectorSpecies<Float> SP = VectorMicroKernel.SP;

  private UnitStrideNarrowKernels() {}

  /** 16 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows16x1(
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
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c4_0 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c5_0 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c6_0 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c7_0 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    FloatVector c8_0 = FloatVector.fromArray(SP, c, cOff + 8 * cRs);
    FloatVector c9_0 = FloatVector.fromArray(SP, c, cOff + 9 * cRs);
    FloatVector c10_0 = FloatVector.fromArray(SP, c, cOff + 10 * cRs);
    FloatVector c11_0 = FloatVector.fromArray(SP, c, cOff + 11 * cRs);
    FloatVector c12_0 = FloatVector.fromArray(SP, c, cOff + 12 * cRs);
    FloatVector c13_0 = FloatVector.fromArray(SP, c, cOff + 13 * cRs);
    FloatVector c14_0 = FloatVector.fromArray(SP, c, cOff + 14 * cRs);
    FloatVector c15_0 = FloatVector.fromArray(SP, c, cOff + 15 * cRs);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
      FloatVector x4 = FloatVector.broadcast(SP, a[k + 4]);
      c4_0 = x4.fma(w0, c4_0);
      FloatVector x5 = FloatVector.broadcast(SP, a[k + 5]);
      c5_0 = x5.fma(w0, c5_0);
      FloatVector x6 = FloatVector.broadcast(SP, a[k + 6]);
      c6_0 = x6.fma(w0, c6_0);
      FloatVector x7 = FloatVector.broadcast(SP, a[k + 7]);
      c7_0 = x7.fma(w0, c7_0);
      FloatVector x8 = FloatVector.broadcast(SP, a[k + 8]);
      c8_0 = x8.fma(w0, c8_0);
      FloatVector x9 = FloatVector.broadcast(SP, a[k + 9]);
      c9_0 = x9.fma(w0, c9_0);
      FloatVector x10 = FloatVector.broadcast(SP, a[k + 10]);
      c10_0 = x10.fma(w0, c10_0);
      FloatVector x11 = FloatVector.broadcast(SP, a[k + 11]);
      c11_0 = x11.fma(w0, c11_0);
      FloatVector x12 = FloatVector.broadcast(SP, a[k + 12]);
      c12_0 = x12.fma(w0, c12_0);
      FloatVector x13 = FloatVector.broadcast(SP, a[k + 13]);
      c13_0 = x13.fma(w0, c13_0);
      FloatVector x14 = FloatVector.broadcast(SP, a[k + 14]);
      c14_0 = x14.fma(w0, c14_0);
      FloatVector x15 = FloatVector.broadcast(SP, a[k + 15]);
      c15_0 = x15.fma(w0, c15_0);
    }
    c0_0.intoArray(c, cOff);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c3_0.intoArray(c, cOff + 3 * cRs);
    c4_0.intoArray(c, cOff + 4 * cRs);
    c5_0.intoArray(c, cOff + 5 * cRs);
    c6_0.intoArray(c, cOff + 6 * cRs);
    c7_0.intoArray(c, cOff + 7 * cRs);
    c8_0.intoArray(c, cOff + 8 * cRs);
    c9_0.intoArray(c, cOff + 9 * cRs);
    c10_0.intoArray(c, cOff + 10 * cRs);
    c11_0.intoArray(c, cOff + 11 * cRs);
    c12_0.intoArray(c, cOff + 12 * cRs);
    c13_0.intoArray(c, cOff + 13 * cRs);
    c14_0.intoArray(c, cOff + 14 * cRs);
    c15_0.intoArray(c, cOff + 15 * cRs);
  }

  /** 4 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows4x1(
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
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
    }
    c0_0.intoArray(c, cOff);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c3_0.intoArray(c, cOff + 3 * cRs);
  }

  /** 1 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows1x1(
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
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
    }
    c0_0.intoArray(c, cOff);
  }

  /** 8 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows8x1(
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
    FloatVector c1_0 = FloatVector.fromArray(SP, c, cOff + 1 * cRs);
    FloatVector c2_0 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c3_0 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c4_0 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c5_0 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c6_0 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c7_0 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = aOff + idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[k]);
      c0_0 = x0.fma(w0, c0_0);
      FloatVector x1 = FloatVector.broadcast(SP, a[k + 1]);
      c1_0 = x1.fma(w0, c1_0);
      FloatVector x2 = FloatVector.broadcast(SP, a[k + 2]);
      c2_0 = x2.fma(w0, c2_0);
      FloatVector x3 = FloatVector.broadcast(SP, a[k + 3]);
      c3_0 = x3.fma(w0, c3_0);
      FloatVector x4 = FloatVector.broadcast(SP, a[k + 4]);
      c4_0 = x4.fma(w0, c4_0);
      FloatVector x5 = FloatVector.broadcast(SP, a[k + 5]);
      c5_0 = x5.fma(w0, c5_0);
      FloatVector x6 = FloatVector.broadcast(SP, a[k + 6]);
      c6_0 = x6.fma(w0, c6_0);
      FloatVector x7 = FloatVector.broadcast(SP, a[k + 7]);
      c7_0 = x7.fma(w0, c7_0);
    }
    c0_0.intoArray(c, cOff);
    c1_0.intoArray(c, cOff + 1 * cRs);
    c2_0.intoArray(c, cOff + 2 * cRs);
    c3_0.intoArray(c, cOff + 3 * cRs);
    c4_0.intoArray(c, cOff + 4 * cRs);
    c5_0.intoArray(c, cOff + 5 * cRs);
    c6_0.intoArray(c, cOff + 6 * cRs);
    c7_0.intoArray(c, cOff + 7 * cRs);
  }
}
