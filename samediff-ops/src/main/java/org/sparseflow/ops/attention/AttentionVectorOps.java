package org.sparseflow.ops.attention;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import org.sparseflow.ops.matmul.VectorSupport;
import org.sparseflow.ops.vector.ExactVectorMath;

/**
 * JDK Vector API version of the backward kernel's element-wise step on one query block, in fp32:
 * {@code P = exp(S - lse)} (zero above the causal diagonal) and {@code dS = P (dP - D)} over the
 * transposed {@code [keys x block]} tiles, vectorised along the query rows of the block (contiguous
 * in the tiles). Only loaded when {@link #applies} holds (so without {@code --add-modules
 * jdk.incubator.vector} the scalar double-precision loop of {@link AttentionBackwardKernel} runs).
 *
 * <p>Reproducibility: the exponential is {@link ExactVectorMath#exp(FloatVector)}, never {@code
 * VectorOperators.EXP}, whose bits depend on how warm the JIT is (see {@link ExactVectorMath}).
 */
final class AttentionVectorOps {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;

  /**
   * 0, 1, ..., lanes - 1, loaded with {@code fromArray}: {@code addIndex} is not intrinsic on JDK
   * 17, and the vector it returns has no exact type for C2, so masks compared against it made the
   * whole loop fall back to boxed vectors ("missing constant" in -XX:+PrintIntrinsics).
   */
  private static final float[] IOTA = iota();

  private static float[] iota() {
    float[] a = new float[SP.length()];
    for (int i = 0; i < a.length; i++) {
      a[i] = i;
    }
    return a;
  }

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
    for (int t0 = 0; t0 < b; t0 += SP.length()) {
      softmaxLanes(p, nk, b, t0, diagOff, lse);
      gradLanes(p, ds, nk, b, t0, di);
    }
  }

  /**
   * {@code p = exp(p - lse)} for the query lanes t0.., zero above the causal diagonal. One small
   * method per pass on purpose: with the exponential and the gradient in one loop, C2 (JDK 17) in
   * some runs lost the exact vector class of the product and stored it through boxed vectors (the
   * whole backward then ran ~1.4x slower, dense layout included).
   */
  private static void softmaxLanes(float[] p, int nk, int b, int t0, int diagOff, float[] lse) {
    FloatVector l = FloatVector.fromArray(SP, lse, t0);
    FloatVector zero = FloatVector.zero(SP);
    FloatVector iota = FloatVector.fromArray(SP, IOTA, 0);
    for (int c = 0; c < nk; c++) {
      int idx = c * b + t0;
      // lanes t0 + j with j < c - diagOff - t0 come before key c - diagOff: masked (no branch:
      // a conditional vector update here made C2 box the vectors)
      VectorMask<Float> keep = iota.compare(VectorOperators.GE, (float) (c - diagOff - t0));
      zero.blend(ExactVectorMath.exp(FloatVector.fromArray(SP, p, idx).sub(l)), keep)
          .intoArray(p, idx);
    }
  }

  /** {@code ds = p (ds - di)} for the query lanes t0.. (p as {@link #softmaxLanes} left it). */
  private static void gradLanes(float[] p, float[] ds, int nk, int b, int t0, float[] di) {
    FloatVector dv = FloatVector.fromArray(SP, di, t0);
    for (int c = 0; c < nk; c++) {
      int idx = c * b + t0;
      FloatVector.fromArray(SP, p, idx)
          .mul(FloatVector.fromArray(SP, ds, idx).sub(dv))
          .intoArray(ds, idx);
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
   * those exponentials over the {@code nk} key rows (added in order of c).
   */
  static void expColumns(float[] a, int nk, int b, float[] maxSum) {
    for (int t0 = 0; t0 < b; t0 += SP.length()) {
      expColumnLanes(a, nk, b, t0, maxSum);
    }
  }

  /** {@link #expColumns} for the query lanes t0.. in one pass (small on purpose, see above). */
  private static void expColumnLanes(float[] a, int nk, int b, int t0, float[] maxSum) {
    FloatVector m = FloatVector.fromArray(SP, maxSum, t0);
    FloatVector sum = FloatVector.zero(SP);
    for (int c = 0; c < nk; c++) {
      int idx = c * b + t0;
      FloatVector e = ExactVectorMath.exp(FloatVector.fromArray(SP, a, idx).sub(m));
      e.intoArray(a, idx);
      // e as the receiver (the same bits: + commutes): with the loop-carried sum as receiver, C2
      // (JDK 17) at times lost its exact vector class and boxed the final store
      sum = e.add(sum);
    }
    sum.intoArray(maxSum, t0);
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
}
