package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.SparsitySchedule;

/** The rule by which one MST preset serves any target density ({@code withTargetDensity}). */
class TargetDensityRuleTest {

  @Test
  void everyLevelKeepsItsDensityRatioToTheFinalOne() {
    MstConfig preset = MstConfig.preset("mst-gpt-mini-block16");
    SparsitySchedule p = preset.getSchedule();
    MstConfig c = preset.withTargetDensity(0.1);
    SparsitySchedule s = c.getSchedule();
    assertEquals(0.9, s.getFinalSparsity(), 1e-12);
    double ratio = (1 - p.getUltraSparsity()) / (1 - p.getFinalSparsity());
    assertEquals(0.1 * ratio, 1 - s.getUltraSparsity(), 1e-12);
    assertTrue(s.getUltraSparsity() > s.getFinalSparsity(), "ultra phase stays the sparsest");
    assertEquals(0.0, s.getInitialSparsity(), 0.0, "a dense warm-up start stays dense");
    assertEquals(p.getWarmupEnd(), s.getWarmupEnd(), 0.0);
    assertEquals(p.getRestorationStart(), s.getRestorationStart(), 0.0);
    assertEquals(p.getRestorationEnd(), s.getRestorationEnd(), 0.0);
    assertEquals(preset.getDeltaT(), c.getDeltaT());
    assertEquals(preset.getPattern(), c.getPattern());
    assertEquals(preset.getUpdateScaleExponent(), c.getUpdateScaleExponent(), 0.0);
  }

  @Test
  void thePresetsOwnDensityLeavesItUnchanged() {
    for (String name : new String[] {"mst", "mst-gpt-mini", "mst-gpt-mini-block16"}) {
      MstConfig preset = MstConfig.preset(name);
      double d = 1 - preset.getSchedule().getFinalSparsity();
      MstConfig same = preset.withTargetDensity(d);
      assertEquals(
          preset.getSchedule().getUltraSparsity(),
          same.getSchedule().getUltraSparsity(),
          1e-12,
          name);
      assertEquals(
          preset.getSchedule().getFinalSparsity(),
          same.getSchedule().getFinalSparsity(),
          1e-12,
          name);
    }
  }

  @Test
  void commutesWithTheStepRule() {
    MstConfig preset = MstConfig.preset("mst-gpt-mini-block16");
    MstConfig a = preset.withTargetDensity(0.05).withTotalSteps(3000);
    MstConfig b = preset.withTotalSteps(3000).withTargetDensity(0.05);
    assertEquals(a, b);
    assertEquals(150, a.getDeltaT());
    assertEquals(0.05, 1 - a.getSchedule().sparsityAt(3000), 1e-9);
  }

  @Test
  void constantSchedulesMoveAsAWholeAndNothingGetsDenserThanOne() {
    SparsitySchedule c = SparsitySchedule.constant(0.8).withFinalDensity(0.5);
    assertEquals(0.5, c.getInitialSparsity(), 1e-12);
    assertEquals(0.5, c.getUltraSparsity(), 1e-12);
    SparsitySchedule ramp =
        SparsitySchedule.builder()
            .initialSparsity(0.5)
            .ultraSparsity(0.9)
            .finalSparsity(0.95)
            .warmup(0, 0.1)
            .restoration(0.5, 0.6)
            .build()
            .withFinalDensity(0.5);
    assertEquals(0.0, ramp.getInitialSparsity(), 1e-12, "density 5 x 0.5 is capped at 1");
    assertEquals(0.0, ramp.getUltraSparsity(), 1e-12);
    assertEquals(0.5, ramp.getFinalSparsity(), 1e-12);
  }

  @Test
  void badDensitiesAreRejectedByName() {
    MstConfig preset = MstConfig.preset("mst-gpt-mini-block16");
    for (double d : new double[] {0.0, -0.1, 1.5, Double.NaN}) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> preset.withTargetDensity(d));
      assertTrue(e.getMessage().startsWith("density = "), e.getMessage());
      assertTrue(e.getMessage().contains("(0, 1]"), e.getMessage());
    }
  }
}
