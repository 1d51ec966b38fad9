package org.sparseflow.ops.vector;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API building blocks whose results do not depend on the JIT. On JDK 17 two lane operations
 * change their bits once C2 has compiled the caller: {@code VectorOperators.EXP} (Intel SVML stubs
 * compiled, a per-lane {@code Math.exp} before) and {@code reduceLanes(ADD)} on floats (a tree of
 * shuffles compiled, a sequential loop before). A kernel that used either gave a training run
 * resumed from a checkpoint, which runs in a JVM at another warm-up stage, bits that differ from an
 * uninterrupted run. The kernels use these instead: an exponential from exactly rounded lane
 * operations (with a scalar twin that matches it bit for bit) and a lane sum in a fixed order.
 *
 * <p>Only loaded when {@code jdk.incubator.vector} is present.
 */
public final class ExactVectorMath {

  private ExactVectorMath() {}

  /**
   * The only species {@link #exp(FloatVector)} takes: a constant, so C2 folds it (through {@code
   * x.species()} it could not where x's exact class was unknown, and the loop fell back to boxed
   * vectors).
   */
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;

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
   * exp of every lane of a vector of the preferred species: within 2 ulp for x in [-87, 88] (0
   * below, +infinity above, NaN for NaN), equal to {@link #exp(float)} bit for bit on every lane,
   * interpreted or compiled, on every x86 vector width.
   */
  public static FloatVector exp(FloatVector x) {
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
    return e.blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, HI));
  }

  /** The scalar twin of {@link #exp(FloatVector)}: the same operations, so the same bits. */
  public static float exp(float x) {
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

  /**
   * The sum of the lanes, added from lane 0 upwards in float: the same bits however the caller is
   * compiled (unlike {@code reduceLanes(VectorOperators.ADD)}, whose order C2 may change).
   */
  public static float sum(FloatVector v) {
    float s = 0f;
    for (float lane : v.toArray()) {
      s += lane;
    }
    return s;
  }
}
