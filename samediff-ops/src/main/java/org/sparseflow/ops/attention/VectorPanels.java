package org.sparseflow.ops.attention;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The two fp32 Vector API loops the attention kernels build their small products from: a row times
 * a transposed panel ({@link #panelRow}, vectorised along the panel's columns) and a weighted sum
 * of rows ({@link #weighted}, vectorised along the rows). Only loaded with {@code --add-modules
 * jdk.incubator.vector}.
 */
final class VectorPanels {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();

  private VectorPanels() {}

  /**
   * {@code out[outOff + c] = sum_x a[aOff + x] panel[x * np + c]} for c < np (np whole vectors),
   * vectorised along c. Small on purpose: C2 keeps the Vector API calls intrinsic only in small
   * methods (inlined into a large one they fell back to the Java implementation, ~20x slower).
   */
  static void panelRow(float[] a, int aOff, float[] panel, int np, int d, float[] out, int outOff) {
    for (int c0 = 0; c0 < np; c0 += L) {
      // four partial sums over x (x mod 4), added pairwise at the end: four independent FMA chains
      FloatVector acc0 = FloatVector.zero(SP);
      FloatVector acc1 = FloatVector.zero(SP);
      FloatVector acc2 = FloatVector.zero(SP);
      FloatVector acc3 = FloatVector.zero(SP);
      int x = 0;
      for (; x + 3 < d; x += 4) {
        int o = x * np + c0;
        acc0 =
            FloatVector.fromArray(SP, panel, o).fma(FloatVector.broadcast(SP, a[aOff + x]), acc0);
        acc1 =
            FloatVector.fromArray(SP, panel, o + np)
                .fma(FloatVector.broadcast(SP, a[aOff + x + 1]), acc1);
        acc2 =
            FloatVector.fromArray(SP, panel, o + 2 * np)
                .fma(FloatVector.broadcast(SP, a[aOff + x + 2]), acc2);
        acc3 =
            FloatVector.fromArray(SP, panel, o + 3 * np)
                .fma(FloatVector.broadcast(SP, a[aOff + x + 3]), acc3);
      }
      for (; x < d; x++) {
        acc0 =
            FloatVector.fromArray(SP, panel, x * np + c0)
                .fma(FloatVector.broadcast(SP, a[aOff + x]), acc0);
      }
      acc0.add(acc1).add(acc2.add(acc3)).intoArray(out, outOff + c0);
    }
  }

  /**
   * {@code y[yOff + x] += sum_{j in [from, to)} w[wOff + j wStep] src[srcOff + j srcStep + x]} for
   * x < d, in order of j, vectorised along x. No branch in the loop: with one, C2 (JDK 17) boxed
   * the accumulator at the merge and the kernel ran ~10x slower.
   */
  static void weighted(
      float[] y,
      int yOff,
      int d,
      float[] src,
      int srcOff,
      int srcStep,
      float[] w,
      int wOff,
      int wStep,
      int from,
      int to) {
    int dv = d / L * L;
    int x0 = 0;
    for (; x0 + 2 * L <= dv; x0 += 2 * L) { // two vectors at a time: two independent chains
      FloatVector acc0 = FloatVector.fromArray(SP, y, yOff + x0);
      FloatVector acc1 = FloatVector.fromArray(SP, y, yOff + x0 + L);
      for (int j = from; j < to; j++) {
        FloatVector wj = FloatVector.broadcast(SP, w[wOff + j * wStep]);
        int so = srcOff + j * srcStep + x0;
        acc0 = FloatVector.fromArray(SP, src, so).fma(wj, acc0);
        acc1 = FloatVector.fromArray(SP, src, so + L).fma(wj, acc1);
      }
      acc0.intoArray(y, yOff + x0);
      acc1.intoArray(y, yOff + x0 + L);
    }
    for (; x0 < dv; x0 += L) {
      FloatVector acc = FloatVector.fromArray(SP, y, yOff + x0);
      for (int j = from; j < to; j++) {
        acc =
            FloatVector.fromArray(SP, src, srcOff + j * srcStep + x0)
                .fma(FloatVector.broadcast(SP, w[wOff + j * wStep]), acc);
      }
      acc.intoArray(y, yOff + x0);
    }
    for (int x = dv; x < d; x++) {
      float acc = y[yOff + x];
      for (int j = from; j < to; j++) {
        acc = Math.fma(w[wOff + j * wStep], src[srcOff + j * srcStep + x], acc);
      }
      y[yOff + x] = acc;
    }
  }
}
