package org.sparseflow.ops.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/**
 * {@link ExactVectorMath}: the vector exponential equals its scalar twin bit for bit on every lane
 * (so the result cannot depend on whether the JIT has compiled the caller, the defect that made
 * resumed training diverge with {@code VectorOperators.EXP}), both are accurate against {@code
 * Math.exp} in double, and the lane sum adds in lane order however often it has run.
 */
class ExactVectorMathTest {

  private static final int L = FloatVector.SPECIES_PREFERRED.length();

  private static float[] inputs() {
    SplittableRandom rnd = new SplittableRandom(17);
    float[] x = new float[L * 4096];
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) (rnd.nextDouble() * 180 - 90);
    }
    float[] special = {
      0f,
      -0f,
      1f,
      -1f,
      1e-8f,
      -1e-8f,
      0.34657359f,
      -0.34657359f,
      -86.99f,
      -87f,
      -87.01f,
      87.99f,
      88f,
      88.01f,
      Float.NEGATIVE_INFINITY,
      Float.POSITIVE_INFINITY,
      Float.NaN,
      -Float.MIN_VALUE,
      Float.MAX_VALUE,
      -Float.MAX_VALUE
    };
    System.arraycopy(special, 0, x, 0, special.length);
    for (int i = 0; i < 2048; i++) { // dense near 0, where softmax arguments mostly lie
      x[special.length + i] = -i / 64f;
    }
    return x;
  }

  @Test
  void vectorLanesEqualScalarTwinBitForBit() {
    float[] x = inputs();
    float[] y = new float[x.length];
    for (int rep = 0; rep < 3; rep++) { // later repetitions run JIT-compiled code
      System.arraycopy(x, 0, y, 0, x.length);
      int lanes = FloatVector.SPECIES_PREFERRED.length(); // inputs() is a multiple of it
      for (int i = 0; i < y.length; i += lanes) {
        ExactVectorMath.exp(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, y, i))
            .intoArray(y, i);
      }
      for (int i = 0; i < x.length; i++) {
        assertEquals(
            Float.floatToRawIntBits(ExactVectorMath.exp(x[i])),
            Float.floatToRawIntBits(y[i]),
            "exp(" + x[i] + ") lane vs scalar");
      }
    }
  }

  @Test
  void accurateInRangeAndExactAtTheEdges() {
    for (float v : inputs()) {
      float e = ExactVectorMath.exp(v);
      if (Float.isNaN(v)) {
        assertTrue(Float.isNaN(e), "NaN in, NaN out");
      } else if (v < -87f) {
        assertEquals(0f, e, "exp(" + v + ")");
      } else if (v > 88f) {
        assertEquals(Float.POSITIVE_INFINITY, e, "exp(" + v + ")");
      } else {
        double ref = Math.exp(v);
        assertTrue(Math.abs(e - ref) <= 2.5e-7 * ref, "exp(" + v + ") = " + e + " vs " + ref);
      }
    }
    assertEquals(1f, ExactVectorMath.exp(0f));
    assertEquals(0f, ExactVectorMath.exp(Float.NEGATIVE_INFINITY));
  }

  @Test
  void laneSumAddsInLaneOrderInterpretedAndCompiled() {
    SplittableRandom rnd = new SplittableRandom(5);
    float[] a = new float[L * 512];
    for (int i = 0; i < a.length; i++) {
      // magnitudes 1e-4 .. 1e4: float sums of these depend on the order of the additions
      a[i] = (float) ((rnd.nextDouble() - 0.5) * Math.pow(10, rnd.nextInt(9) - 4));
    }
    for (int rep = 0; rep < 200; rep++) { // later repetitions run JIT-compiled code
      for (int i = 0; i < a.length; i += L) {
        float want = 0f;
        for (int j = 0; j < L; j++) {
          want += a[i + j];
        }
        float got = ExactVectorMath.sum(FloatVector.fromArray(FloatVector.SPECIES_PREFERRED, a, i));
        assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(got), "lanes at " + i);
      }
    }
  }
}
