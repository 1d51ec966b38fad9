package org.sparseflow.ops.fused;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.sparseflow.ops.vector.ExactVectorMath;

/**
 * The float row loops of {@link RowNorm} as JDK Vector API loops, for rows whose length is a
 * multiple of the vector length. Loaded only when {@code jdk.incubator.vector} is present ({@link
 * RowNorm#VECTOR}). Row sums are taken lane-wise and then across lanes, so they round differently
 * from the scalar loops (within float rounding of the same sums).
 */
final class RowNormVector {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  private RowNormVector() {}

  static boolean applies(int nC) {
    return nC % S.length() == 0;
  }

  /** xhat into {@code xh}, 1/sigma into {@code inv}; with {@code g != null} y in place of x. */
  static void forwardRows(
      float[] x, float[] xh, float[] inv, float[] g, float[] bb, double eps, int nR, int nC) {
    int l = S.length();
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      FloatVector acc = FloatVector.zero(S);
      for (int c = 0; c < nC; c += l) {
        acc = acc.add(FloatVector.fromArray(S, x, o + c));
      }
      float m = ExactVectorMath.sum(acc) / nC;
      FloatVector mv = FloatVector.broadcast(S, m);
      FloatVector sq = FloatVector.zero(S);
      for (int c = 0; c < nC; c += l) {
        FloatVector d = FloatVector.fromArray(S, x, o + c).sub(mv);
        sq = d.fma(d, sq);
      }
      double v = ExactVectorMath.sum(sq) / nC + eps;
      float iv = (float) (v > 0 ? 1.0 / Math.sqrt(v) : 0.0);
      inv[r] = iv;
      FloatVector ivv = FloatVector.broadcast(S, iv);
      for (int c = 0; c < nC; c += l) {
        FloatVector h = FloatVector.fromArray(S, x, o + c).sub(mv).mul(ivv);
        h.intoArray(xh, o + c);
        if (g != null) {
          h.fma(FloatVector.fromArray(S, g, c), FloatVector.fromArray(S, bb, c))
              .intoArray(x, o + c);
        }
      }
    }
  }

  /** dx in place of dy; gain and bias gradients added into dg, db. */
  static void backwardRows(
      float[] dy, float[] xh, float[] inv, float[] g, double[] dg, double[] db, int nR, int nC) {
    int l = S.length();
    float[] dgf = new float[nC], dbf = new float[nC];
    for (int r = 0; r < nR; r++) {
      int o = r * nC;
      FloatVector sd = FloatVector.zero(S), sdx = FloatVector.zero(S);
      for (int c = 0; c < nC; c += l) {
        FloatVector d = FloatVector.fromArray(S, dy, o + c);
        FloatVector h = FloatVector.fromArray(S, xh, o + c);
        d.fma(h, FloatVector.fromArray(S, dgf, c)).intoArray(dgf, c);
        d.add(FloatVector.fromArray(S, dbf, c)).intoArray(dbf, c);
        FloatVector dh = d.mul(FloatVector.fromArray(S, g, c));
        sd = sd.add(dh);
        sdx = dh.fma(h, sdx);
      }
      float sumD = ExactVectorMath.sum(sd);
      float sumDX = ExactVectorMath.sum(sdx);
      FloatVector k = FloatVector.broadcast(S, inv[r] / nC);
      FloatVector n = FloatVector.broadcast(S, (float) nC);
      FloatVector sdv = FloatVector.broadcast(S, sumD), sdxv = FloatVector.broadcast(S, sumDX);
      for (int c = 0; c < nC; c += l) {
        FloatVector d = FloatVector.fromArray(S, dy, o + c);
        FloatVector h = FloatVector.fromArray(S, xh, o + c);
        FloatVector t = n.mul(d).mul(FloatVector.fromArray(S, g, c)).sub(sdv).sub(h.mul(sdxv));
        k.mul(t).intoArray(dy, o + c);
      }
    }
    for (int c = 0; c < nC; c++) {
      dg[c] += dgf[c];
      db[c] += dbf[c];
    }
  }
}
