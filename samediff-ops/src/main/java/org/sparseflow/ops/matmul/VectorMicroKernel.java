package org.sparseflow.ops.matmul;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector species of the fp32 kernels and their small helpers. The register-blocked
 * micro-kernels themselves ({@code StridedMicroKernels}, {@code UnitStrideMicroKernels}) are
 * generated at build time by {@code samediff-ops/src/build/MicroKernelGenerator.java}: C2 keeps
 * each accumulator in a vector register only when it is a local variable, so each shape is
 * unrolled. The strided ones compute, for rows r of a small tile of C and columns {@code 0 .. nv *
 * L} (L = lanes of the preferred species),
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

  /** sum[i] += part[i] for from <= i < to. */
  static void addInto(float[] part, float[] sum, int from, int to) {
    int i = from;
    for (; i + L <= to; i += L) {
      FloatVector.fromArray(SP, part, i).add(FloatVector.fromArray(SP, sum, i)).intoArray(sum, i);
    }
    for (; i < to; i++) {
      sum[i] += part[i];
    }
  }

  /** Sum of |a[i]| for i < n (NaN if any is NaN, infinite if any is infinite). */
  static double absSum(float[] a, int n) {
    FloatVector acc = FloatVector.zero(SP);
    int i = 0;
    for (; i + L <= n; i += L) {
      acc = FloatVector.fromArray(SP, a, i).abs().add(acc);
    }
    double s = acc.reduceLanes(VectorOperators.ADD);
    for (; i < n; i++) {
      s += Math.abs(a[i]);
    }
    return s;
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
}
