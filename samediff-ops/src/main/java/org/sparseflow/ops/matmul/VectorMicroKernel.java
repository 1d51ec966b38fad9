package org.sparseflow.ops.matmul;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Register-blocked fp32 micro-kernels on the JDK Vector API (generated, unrolled by hand: C2 keeps
 * each accumulator in a vector register only when it is a local variable). Each computes, for rows
 * r of a small tile of C and columns {@code 0 .. nv * L} (L = lanes of the preferred species),
 *
 * <pre>
 * C[cOff + r * cRs + col] += sum over s &lt; n of a[aOff + r * aRs + idx[s]] * b[bOff + s * bSs +
 * col]
 * </pre>
 *
 * so A is read by scalar broadcasts through an index list (the kept rows of a block column, or the
 * token rows of a weight-gradient block) and B by contiguous vector loads (a packed kept-block
 * panel, or a row of the output gradient). A single flat loop over s matters: with a nested loop
 * over blocks the JDK 17 C2 compiler did not keep the vectors in registers (about 30x slower).
 */
final class VectorMicroKernel {

  static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;

  /** Lanes per vector: 16 with AVX-512, 8 with AVX2. */
  static final int L = SP.length();

  private VectorMicroKernel() {}

  /** sums[c] += a[r * ld + c] for r < rows, c < cols. */
  static void addRows(float[] a, int rows, int cols, int ld, float[] sums) {
    for (int r = 0; r < rows; r++) {
      int c = 0;
      for (; c + L <= cols; c += L) {
        FloatVector.fromArray(SP, a, r * ld + c)
            .add(FloatVector.fromArray(SP, sums, c))
            .intoArray(sums, c);
      }
      for (; c < cols; c++) {
        sums[c] += a[r * ld + c];
      }
    }
  }

  /** True when a[0 .. n) holds a NaN or an infinity (x * 0 is 0 exactly for finite x only). */
  static boolean nonFinite(float[] a, int n) {
    FloatVector acc = FloatVector.zero(SP);
    int i = 0;
    for (; i + L <= n; i += L) {
      acc = FloatVector.fromArray(SP, a, i).mul(0f).add(acc);
    }
    float s = acc.reduceLanes(VectorOperators.ADD);
    for (; i < n; i++) {
      s += a[i] * 0f;
    }
    return s != 0f;
  }

  /** 8 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows8x2(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c01 = FloatVector.fromArray(SP, c, cOff + L);
    FloatVector c10 = FloatVector.fromArray(SP, c, cOff + cRs);
    FloatVector c11 = FloatVector.fromArray(SP, c, cOff + cRs + L);
    FloatVector c20 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c21 = FloatVector.fromArray(SP, c, cOff + 2 * cRs + L);
    FloatVector c30 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c31 = FloatVector.fromArray(SP, c, cOff + 3 * cRs + L);
    FloatVector c40 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c41 = FloatVector.fromArray(SP, c, cOff + 4 * cRs + L);
    FloatVector c50 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c51 = FloatVector.fromArray(SP, c, cOff + 5 * cRs + L);
    FloatVector c60 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c61 = FloatVector.fromArray(SP, c, cOff + 6 * cRs + L);
    FloatVector c70 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    FloatVector c71 = FloatVector.fromArray(SP, c, cOff + 7 * cRs + L);
    final int a0 = aOff;
    final int a1 = aOff + aRs;
    final int a2 = aOff + 2 * aRs;
    final int a3 = aOff + 3 * aRs;
    final int a4 = aOff + 4 * aRs;
    final int a5 = aOff + 5 * aRs;
    final int a6 = aOff + 6 * aRs;
    final int a7 = aOff + 7 * aRs;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
      c01 = x0.fma(w1, c01);
      FloatVector x1 = FloatVector.broadcast(SP, a[a1 + k]);
      c10 = x1.fma(w0, c10);
      c11 = x1.fma(w1, c11);
      FloatVector x2 = FloatVector.broadcast(SP, a[a2 + k]);
      c20 = x2.fma(w0, c20);
      c21 = x2.fma(w1, c21);
      FloatVector x3 = FloatVector.broadcast(SP, a[a3 + k]);
      c30 = x3.fma(w0, c30);
      c31 = x3.fma(w1, c31);
      FloatVector x4 = FloatVector.broadcast(SP, a[a4 + k]);
      c40 = x4.fma(w0, c40);
      c41 = x4.fma(w1, c41);
      FloatVector x5 = FloatVector.broadcast(SP, a[a5 + k]);
      c50 = x5.fma(w0, c50);
      c51 = x5.fma(w1, c51);
      FloatVector x6 = FloatVector.broadcast(SP, a[a6 + k]);
      c60 = x6.fma(w0, c60);
      c61 = x6.fma(w1, c61);
      FloatVector x7 = FloatVector.broadcast(SP, a[a7 + k]);
      c70 = x7.fma(w0, c70);
      c71 = x7.fma(w1, c71);
    }
    c00.intoArray(c, cOff);
    c01.intoArray(c, cOff + L);
    c10.intoArray(c, cOff + cRs);
    c11.intoArray(c, cOff + cRs + L);
    c20.intoArray(c, cOff + 2 * cRs);
    c21.intoArray(c, cOff + 2 * cRs + L);
    c30.intoArray(c, cOff + 3 * cRs);
    c31.intoArray(c, cOff + 3 * cRs + L);
    c40.intoArray(c, cOff + 4 * cRs);
    c41.intoArray(c, cOff + 4 * cRs + L);
    c50.intoArray(c, cOff + 5 * cRs);
    c51.intoArray(c, cOff + 5 * cRs + L);
    c60.intoArray(c, cOff + 6 * cRs);
    c61.intoArray(c, cOff + 6 * cRs + L);
    c70.intoArray(c, cOff + 7 * cRs);
    c71.intoArray(c, cOff + 7 * cRs + L);
  }

  /** 4 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows4x2(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c01 = FloatVector.fromArray(SP, c, cOff + L);
    FloatVector c10 = FloatVector.fromArray(SP, c, cOff + cRs);
    FloatVector c11 = FloatVector.fromArray(SP, c, cOff + cRs + L);
    FloatVector c20 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c21 = FloatVector.fromArray(SP, c, cOff + 2 * cRs + L);
    FloatVector c30 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c31 = FloatVector.fromArray(SP, c, cOff + 3 * cRs + L);
    final int a0 = aOff;
    final int a1 = aOff + aRs;
    final int a2 = aOff + 2 * aRs;
    final int a3 = aOff + 3 * aRs;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
      c01 = x0.fma(w1, c01);
      FloatVector x1 = FloatVector.broadcast(SP, a[a1 + k]);
      c10 = x1.fma(w0, c10);
      c11 = x1.fma(w1, c11);
      FloatVector x2 = FloatVector.broadcast(SP, a[a2 + k]);
      c20 = x2.fma(w0, c20);
      c21 = x2.fma(w1, c21);
      FloatVector x3 = FloatVector.broadcast(SP, a[a3 + k]);
      c30 = x3.fma(w0, c30);
      c31 = x3.fma(w1, c31);
    }
    c00.intoArray(c, cOff);
    c01.intoArray(c, cOff + L);
    c10.intoArray(c, cOff + cRs);
    c11.intoArray(c, cOff + cRs + L);
    c20.intoArray(c, cOff + 2 * cRs);
    c21.intoArray(c, cOff + 2 * cRs + L);
    c30.intoArray(c, cOff + 3 * cRs);
    c31.intoArray(c, cOff + 3 * cRs + L);
  }

  /** 16 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows16x1(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c10 = FloatVector.fromArray(SP, c, cOff + cRs);
    FloatVector c20 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c30 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c40 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c50 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c60 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c70 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    FloatVector c80 = FloatVector.fromArray(SP, c, cOff + 8 * cRs);
    FloatVector c90 = FloatVector.fromArray(SP, c, cOff + 9 * cRs);
    FloatVector c100 = FloatVector.fromArray(SP, c, cOff + 10 * cRs);
    FloatVector c110 = FloatVector.fromArray(SP, c, cOff + 11 * cRs);
    FloatVector c120 = FloatVector.fromArray(SP, c, cOff + 12 * cRs);
    FloatVector c130 = FloatVector.fromArray(SP, c, cOff + 13 * cRs);
    FloatVector c140 = FloatVector.fromArray(SP, c, cOff + 14 * cRs);
    FloatVector c150 = FloatVector.fromArray(SP, c, cOff + 15 * cRs);
    final int a0 = aOff;
    final int a1 = aOff + aRs;
    final int a2 = aOff + 2 * aRs;
    final int a3 = aOff + 3 * aRs;
    final int a4 = aOff + 4 * aRs;
    final int a5 = aOff + 5 * aRs;
    final int a6 = aOff + 6 * aRs;
    final int a7 = aOff + 7 * aRs;
    final int a8 = aOff + 8 * aRs;
    final int a9 = aOff + 9 * aRs;
    final int a10 = aOff + 10 * aRs;
    final int a11 = aOff + 11 * aRs;
    final int a12 = aOff + 12 * aRs;
    final int a13 = aOff + 13 * aRs;
    final int a14 = aOff + 14 * aRs;
    final int a15 = aOff + 15 * aRs;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
      FloatVector x1 = FloatVector.broadcast(SP, a[a1 + k]);
      c10 = x1.fma(w0, c10);
      FloatVector x2 = FloatVector.broadcast(SP, a[a2 + k]);
      c20 = x2.fma(w0, c20);
      FloatVector x3 = FloatVector.broadcast(SP, a[a3 + k]);
      c30 = x3.fma(w0, c30);
      FloatVector x4 = FloatVector.broadcast(SP, a[a4 + k]);
      c40 = x4.fma(w0, c40);
      FloatVector x5 = FloatVector.broadcast(SP, a[a5 + k]);
      c50 = x5.fma(w0, c50);
      FloatVector x6 = FloatVector.broadcast(SP, a[a6 + k]);
      c60 = x6.fma(w0, c60);
      FloatVector x7 = FloatVector.broadcast(SP, a[a7 + k]);
      c70 = x7.fma(w0, c70);
      FloatVector x8 = FloatVector.broadcast(SP, a[a8 + k]);
      c80 = x8.fma(w0, c80);
      FloatVector x9 = FloatVector.broadcast(SP, a[a9 + k]);
      c90 = x9.fma(w0, c90);
      FloatVector x10 = FloatVector.broadcast(SP, a[a10 + k]);
      c100 = x10.fma(w0, c100);
      FloatVector x11 = FloatVector.broadcast(SP, a[a11 + k]);
      c110 = x11.fma(w0, c110);
      FloatVector x12 = FloatVector.broadcast(SP, a[a12 + k]);
      c120 = x12.fma(w0, c120);
      FloatVector x13 = FloatVector.broadcast(SP, a[a13 + k]);
      c130 = x13.fma(w0, c130);
      FloatVector x14 = FloatVector.broadcast(SP, a[a14 + k]);
      c140 = x14.fma(w0, c140);
      FloatVector x15 = FloatVector.broadcast(SP, a[a15 + k]);
      c150 = x15.fma(w0, c150);
    }
    c00.intoArray(c, cOff);
    c10.intoArray(c, cOff + cRs);
    c20.intoArray(c, cOff + 2 * cRs);
    c30.intoArray(c, cOff + 3 * cRs);
    c40.intoArray(c, cOff + 4 * cRs);
    c50.intoArray(c, cOff + 5 * cRs);
    c60.intoArray(c, cOff + 6 * cRs);
    c70.intoArray(c, cOff + 7 * cRs);
    c80.intoArray(c, cOff + 8 * cRs);
    c90.intoArray(c, cOff + 9 * cRs);
    c100.intoArray(c, cOff + 10 * cRs);
    c110.intoArray(c, cOff + 11 * cRs);
    c120.intoArray(c, cOff + 12 * cRs);
    c130.intoArray(c, cOff + 13 * cRs);
    c140.intoArray(c, cOff + 14 * cRs);
    c150.intoArray(c, cOff + 15 * cRs);
  }

  /** 8 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows8x1(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c10 = FloatVector.fromArray(SP, c, cOff + cRs);
    FloatVector c20 = FloatVector.fromArray(SP, c, cOff + 2 * cRs);
    FloatVector c30 = FloatVector.fromArray(SP, c, cOff + 3 * cRs);
    FloatVector c40 = FloatVector.fromArray(SP, c, cOff + 4 * cRs);
    FloatVector c50 = FloatVector.fromArray(SP, c, cOff + 5 * cRs);
    FloatVector c60 = FloatVector.fromArray(SP, c, cOff + 6 * cRs);
    FloatVector c70 = FloatVector.fromArray(SP, c, cOff + 7 * cRs);
    final int a0 = aOff;
    final int a1 = aOff + aRs;
    final int a2 = aOff + 2 * aRs;
    final int a3 = aOff + 3 * aRs;
    final int a4 = aOff + 4 * aRs;
    final int a5 = aOff + 5 * aRs;
    final int a6 = aOff + 6 * aRs;
    final int a7 = aOff + 7 * aRs;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
      FloatVector x1 = FloatVector.broadcast(SP, a[a1 + k]);
      c10 = x1.fma(w0, c10);
      FloatVector x2 = FloatVector.broadcast(SP, a[a2 + k]);
      c20 = x2.fma(w0, c20);
      FloatVector x3 = FloatVector.broadcast(SP, a[a3 + k]);
      c30 = x3.fma(w0, c30);
      FloatVector x4 = FloatVector.broadcast(SP, a[a4 + k]);
      c40 = x4.fma(w0, c40);
      FloatVector x5 = FloatVector.broadcast(SP, a[a5 + k]);
      c50 = x5.fma(w0, c50);
      FloatVector x6 = FloatVector.broadcast(SP, a[a6 + k]);
      c60 = x6.fma(w0, c60);
      FloatVector x7 = FloatVector.broadcast(SP, a[a7 + k]);
      c70 = x7.fma(w0, c70);
    }
    c00.intoArray(c, cOff);
    c10.intoArray(c, cOff + cRs);
    c20.intoArray(c, cOff + 2 * cRs);
    c30.intoArray(c, cOff + 3 * cRs);
    c40.intoArray(c, cOff + 4 * cRs);
    c50.intoArray(c, cOff + 5 * cRs);
    c60.intoArray(c, cOff + 6 * cRs);
    c70.intoArray(c, cOff + 7 * cRs);
  }

  /** 1 row(s) by 2 vector(s) of C; see the class comment for the operands. */
  static void rows1x2(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    FloatVector c01 = FloatVector.fromArray(SP, c, cOff + L);
    final int a0 = aOff;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector w1 = FloatVector.fromArray(SP, b, bi + L);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
      c01 = x0.fma(w1, c01);
    }
    c00.intoArray(c, cOff);
    c01.intoArray(c, cOff + L);
  }

  /** 1 row(s) by 1 vector(s) of C; see the class comment for the operands. */
  static void rows1x1(
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
    FloatVector c00 = FloatVector.fromArray(SP, c, cOff);
    final int a0 = aOff;
    for (int s = 0; s < n; s++) {
      int bi = bOff + s * bSs;
      int k = idx[s];
      FloatVector w0 = FloatVector.fromArray(SP, b, bi);
      FloatVector x0 = FloatVector.broadcast(SP, a[a0 + k]);
      c00 = x0.fma(w0, c00);
    }
    c00.intoArray(c, cOff);
  }
}
