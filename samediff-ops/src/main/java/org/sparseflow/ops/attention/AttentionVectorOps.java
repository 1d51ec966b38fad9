package org.sparseflow.ops.attention;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * JDK Vector API version of the backward kernel's element-wise step on one query block, in fp32:
 * {@code P = exp(S - lse)} (zero above the causal diagonal) and {@code dS = P (dP - D)} over the
 * transposed {@code [keys x block]} tiles, vectorised along the query rows of the block (contiguous
 * in the tiles). Only loaded when {@link #applies} holds (so without {@code --add-modules
 * jdk.incubator.vector} the scalar double-precision loop of {@link AttentionBackwardKernel} runs).
 *
 * <p>Reproducibility: the exponential is {@link #expInPlace}, built from IEEE-exact lane operations
 * only (add, mul, fma, min/max, conversions, shifts), never {@code VectorOperators.EXP}. On JDK 17
 * that operator runs Intel SVML stubs once C2 has compiled the caller and a per-lane {@code
 * Math.exp} before, so its results depended on how warm the JIT was: a training run resumed from a
 * checkpoint then diverged bitwise from an uninterrupted one.
 */
final class AttentionVectorOps {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;

  private AttentionVectorOps() {}

  /** True when the vector module is present and the block size is a multiple of the lanes. */
  static boolean applies(int block) {
    return VectorSupport.AVAILABLE && block % VectorSupport.lanes() == 0;
  }

  /**
   * In place over {@code nk} key rows of {@code b} query columns: {@code p[c*b+t] = exp(p[c*b+t] -
   * lse[t])} and {@code ds[c*b+t] = p (ds[c*b+t] - di[t])}, with {@code p = ds = 0} where the key
   * {@code c - diagOff} of the diagonal tile lies after query {@code t}.
   */
  static void softmaxGrad(
      float[] p, float[] ds, int nk, int b, int diagOff, float[] lse, float[] di) {
    final int lanes = SP.length();
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector l = FloatVector.fromArray(SP, lse, t0);
      for (int c = 0; c < nk; c++) {
        int idx = c * b + t0;
        FloatVector.fromArray(SP, p, idx).sub(l).intoArray(p, idx);
      }
    }
    expInPlace(p, nk * b);
    FloatVector zero = FloatVector.zero(SP);
    FloatVector iota = FloatVector.zero(SP).addIndex(1);
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector dv = FloatVector.fromArray(SP, di, t0);
      for (int c = 0; c < nk; c++) {
        int idx = c * b + t0;
        // lanes t0 + j with j < c - diagOff - t0 come before key c - diagOff: masked (no branch:
        // a conditional vector update here made C2 box the vectors)
        VectorMask<Float> keep = iota.compare(VectorOperators.GE, (float) (c - diagOff - t0));
        FloatVector pv = zero.blend(FloatVector.fromArray(SP, p, idx), keep);
        FloatVector g = pv.mul(FloatVector.fromArray(SP, ds, idx).sub(dv));
        pv.intoArray(p, idx);
        g.intoArray(ds, idx);
      }
    }
  }

  /** {@code max[t] = max_c a[c*b+t]} over {@code nk} key rows. */
  static void columnMax(float[] a, int nk, int b, float[] max) {
    final int lanes = SP.length();
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector m = FloatVector.broadcast(SP, Float.NEGATIVE_INFINITY);
      for (int c = 0; c < nk; c++) {
        m = m.max(FloatVector.fromArray(SP, a, c * b + t0));
      }
      m.intoArray(max, t0);
    }
  }

  /**
   * In place {@code a[c*b+t] = exp(a[c*b+t] - maxSum[t])}, and then {@code maxSum[t]} = the sum of
   * those exponentials over the {@code nk} key rows.
   */
  static void expColumns(float[] a, int nk, int b, float[] maxSum) {
    final int lanes = SP.length();
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector m = FloatVector.fromArray(SP, maxSum, t0);
      for (int c = 0; c < nk; c++) {
        int idx = c * b + t0;
        FloatVector.fromArray(SP, a, idx).sub(m).intoArray(a, idx);
      }
    }
    expInPlace(a, nk * b);
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector sum = FloatVector.zero(SP);
      for (int c = 0; c < nk; c++) {
        sum = sum.add(FloatVector.fromArray(SP, a, c * b + t0));
      }
      sum.intoArray(maxSum, t0);
    }
  }

  /** In place {@code a[c*b+t] *= f[t]} over {@code nk} key rows. */
  static void scaleColumns(float[] a, int nk, int b, float[] f) {
    final int lanes = SP.length();
    for (int t0 = 0; t0 < b; t0 += lanes) {
      FloatVector s = FloatVector.fromArray(SP, f, t0);
      for (int c = 0; c < nk; c++) {
        int idx = c * b + t0;
        FloatVector.fromArray(SP, a, idx).mul(s).intoArray(a, idx);
      }
    }
  }

  // exp(x) = 2^n e^r with n = round(x / ln 2), r = x - n ln 2 (Cody and Waite 1980, "Software
  // Manual for the Elementary Functions": ln 2 split in a short high part and a low correction)
  // and e^r by its Taylor polynomial of degree 7 on |r| <= ln(2) / 2 (truncation below 2^-26).
  private static final float LOG2E = 1.44269504f;
  private static final float LN2_HI = 0.693145751953125f;
  private static final float LN2_LO = 1.42860677e-6f;
  private static final float ROUND = 12582912f; // 1.5 * 2^23: (v + ROUND) - ROUND rounds to even
  private static final int ROUND_BITS = 0x4B400000; // the bits of ROUND
  private static final float LO = -87f; // below: 0 (exp(-87) ~ 1.6e-38, the normal range ends)
  private static final float HI = 88f; // above: +infinity (only x in (88, 88.72] is misreported)
  private static final float C2 = 1f / 2;
  private static final float C3 = 1f / 6;
  private static final float C4 = 1f / 24;
  private static final float C5 = 1f / 120;
  private static final float C6 = 1f / 720;
  private static final float C7 = 1f / 5040;

  /**
   * {@code a[i] = exp(a[i])} for i &lt; n (a multiple of the lanes), vectorised: within 2 ulp for x
   * in [-87, 88] (0 below, +infinity above, NaN for NaN), from exactly rounded lane operations
   * only, so it gives the same bits interpreted, C1- or C2-compiled, on every x86 vector width, and
   * equals {@link #exp(float)} bit for bit.
   */
  static void expInPlace(float[] a, int n) {
    for (int i = 0; i < n; i += SP.length()) {
      FloatVector x = FloatVector.fromArray(SP, a, i);
      FloatVector xc = x.max(LO).min(HI);
      FloatVector tv = xc.mul(LOG2E).add(ROUND); // n in the low mantissa bits
      FloatVector nf = tv.sub(ROUND);
      FloatVector r = nf.neg().fma(FloatVector.broadcast(SP, LN2_HI), xc);
      r = nf.neg().fma(FloatVector.broadcast(SP, LN2_LO), r);
      FloatVector p = r.fma(C7, C6);
      p = p.fma(r, FloatVector.broadcast(SP, C5));
      p = p.fma(r, FloatVector.broadcast(SP, C4));
      p = p.fma(r, FloatVector.broadcast(SP, C3));
      p = p.fma(r, FloatVector.broadcast(SP, C2));
      p = p.fma(r, FloatVector.broadcast(SP, 1f));
      p = p.fma(r, FloatVector.broadcast(SP, 1f));
      // 2^n from the bits of tv (0x4B400000 + n), no float-int conversion (not intrinsic on JDK 17)
      FloatVector scale =
          tv.reinterpretAsInts()
              .add(127 - ROUND_BITS)
              .lanewise(VectorOperators.LSHL, 23)
              .reinterpretAsFloats();
      FloatVector e = p.mul(scale);
      e = e.blend(0f, x.compare(VectorOperators.LT, LO));
      (e.blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, HI))).intoArray(a, i);
    }
  }

  /** The scalar twin of {@link #expInPlace}: the same operations, so the same bits. */
  static float exp(float x) {
    if (x < LO) {
      return 0f;
    }
    if (x > HI) {
      return Float.POSITIVE_INFINITY;
    }
    float xc = Math.min(Math.max(x, LO), HI);
    float tv = xc * LOG2E + ROUND;
    float nf = tv - ROUND;
    float r = Math.fma(-nf, LN2_HI, xc);
    r = Math.fma(-nf, LN2_LO, r);
    float p = Math.fma(r, C7, C6);
    p = Math.fma(p, r, C5);
    p = Math.fma(p, r, C4);
    p = Math.fma(p, r, C3);
    p = Math.fma(p, r, C2);
    p = Math.fma(p, r, 1f);
    p = Math.fma(p, r, 1f);
    return p * Float.intBitsToFloat((Float.floatToRawIntBits(tv) + 127 - ROUND_BITS) << 23);
  }
}
