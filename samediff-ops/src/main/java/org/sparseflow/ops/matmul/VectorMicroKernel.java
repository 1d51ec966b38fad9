package org.sparseflow.ops.matmul;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector species of the fp32 kernels and their small helpers. The register-blocked
 * micro-kernels themselves ({@code UnitStrideMicroKernels}, dispatched by {@link
 * UnitStrideKernels}) are generated at build time by {@code
 * samediff-ops/src/build/MicroKernelGenerator.java}: C2 keeps each accumulator in a vector register
 * only when it is a local variable, so each shape is unrolled. An earlier strided form (A's rows a
 * row stride apart) served dx until dx read the dy tile transposed; the unit-stride form measured
 * 97 -> 128 GFLOP/s on one AVX-512 core (docs/experiments/kernels.md).
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
