package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.sparseflow.mst.core.GrowMode;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.SplitMix64;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * The topology update from per-block scores (what packed storage has) decides exactly as the one
 * from dense weights and gradients, for every grow mode, at targets that prune, hold and grow.
 */
class UnitScoreUpdateTest {

  static double[] blockNorms(LayerMask m, float[] x, int b) {
    double[] s = new double[m.unitCount()];
    for (int r = 0; r < m.rows(); r++) {
      for (int c = 0; c < m.cols(); c++) {
        s[m.unitOf(r, c)] += (double) x[r * m.cols() + c] * x[r * m.cols() + c];
      }
    }
    for (int i = 0; i < s.length; i++) {
      s[i] = Math.sqrt(s[i]);
    }
    return s;
  }

  @Test
  void scoresGiveTheSameMasksAsDenseArrays() {
    MaskPattern p = MaskPattern.parse("block8");
    int checked = 0;
    for (long seed = 1; seed <= 12; seed++) {
      Random r = new Random(seed);
      LayerMask m = LayerMask.random("w", 48, 64, p, 0.3, new SplitMix64(seed));
      float[] w = new float[48 * 64];
      float[] g = new float[w.length];
      for (int i = 0; i < w.length; i++) {
        w[i] = m.isKept(i / 64, i % 64) ? (float) r.nextGaussian() : 0f;
        g[i] = (float) r.nextGaussian();
      }
      for (GrowMode mode : GrowMode.values()) {
        for (double target : new double[] {0.8, 0.7, 0.5}) {
          TopologyUpdater.Result dense =
              TopologyUpdater.update(m, w, g, target, 0.3, mode, 1.0, new SplitMix64(seed));
          TopologyUpdater.Result scored =
              TopologyUpdater.updateFromScores(
                  m,
                  blockNorms(m, w, 8),
                  blockNorms(m, g, 8),
                  target,
                  0.3,
                  mode,
                  1.0,
                  new SplitMix64(seed));
          assertEquals(dense.mask, scored.mask, "seed " + seed + " " + mode + " " + target);
          assertEquals(dense.grown, scored.grown);
          assertEquals(dense.pruned, scored.pruned);
          checked++;
        }
      }
    }
    assertTrue(checked >= 12 * 3);
  }

  @Test
  void missingOrShortScoresAreNamedErrors() {
    LayerMask m =
        LayerMask.random("w", 16, 16, MaskPattern.parse("block8"), 0.5, new SplitMix64(1));
    Exception e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                TopologyUpdater.updateFromScores(
                    m, new double[3], null, 0.5, 0.1, GrowMode.RANDOM, 1, new SplitMix64(1)));
    assertTrue(e.getMessage().contains("weightScores of w"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                TopologyUpdater.updateFromScores(
                    m, new double[4], null, 0.5, 0.1, GrowMode.GRADIENT, 1, new SplitMix64(1)));
    assertTrue(e.getMessage().contains("gradScores of w"), e.getMessage());
  }
}
