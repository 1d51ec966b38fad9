package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.util.*;
import org.junit.jupiter.api.Test;
import org.sparseflow.layers.config.DensityDistribution;
import org.sparseflow.mst.core.*;
import org.sparseflow.ops.pattern.MaskPattern;

class CoreTest {

  private static SparsitySchedule threePhase(RampShape w) {
    return SparsitySchedule.builder()
        .totalSteps(1000)
        .initialSparsity(0.0)
        .ultraSparsity(0.9)
        .finalSparsity(0.5)
        .warmup(0.1, 0.3)
        .restoration(0.7, 0.9)
        .warmupShape(w)
        .restorationShape(RampShape.LINEAR)
        .build();
  }

  @Test
  void scheduleHasThreePhasesAndRampShapes() {
    SparsitySchedule lin = threePhase(RampShape.LINEAR);
    assertEquals(0.0, lin.sparsityAt(50));
    assertEquals(0.45, lin.sparsityAt(200), 1e-12);
    assertEquals(0.9, lin.sparsityAt(300));
    assertEquals(0.9, lin.sparsityAt(699));
    assertEquals(0.7, lin.sparsityAt(800), 1e-12);
    assertEquals(0.5, lin.sparsityAt(950));
    assertEquals(Phase.WARMUP, lin.phaseAt(299));
    assertEquals(Phase.ULTRA, lin.phaseAt(300));
    assertEquals(Phase.RESTORATION, lin.phaseAt(700));
    SparsitySchedule cub = threePhase(RampShape.CUBIC);
    // Zhu-Gupta: s = 0.9 + (0 - 0.9)(1 - 0.5)^3 at the midpoint
    assertEquals(0.9 - 0.9 * 0.125, cub.sparsityAt(200), 1e-12);
    assertTrue(cub.sparsityAt(150) > lin.sparsityAt(150), "cubic prunes faster early");
    SparsitySchedule step =
        SparsitySchedule.builder()
            .totalSteps(1000)
            .ultraSparsity(0.8)
            .finalSparsity(0.8)
            .warmup(0, 0.4)
            .restoration(1, 1)
            .warmupShape(RampShape.STEP)
            .stepLevels(4)
            .build();
    assertEquals(0.0, step.sparsityAt(99));
    assertEquals(0.2, step.sparsityAt(100), 1e-12);
    assertEquals(0.6, step.sparsityAt(399), 1e-12);
    // absolute steps give the same as fractions
    SparsitySchedule abs =
        SparsitySchedule.builder()
            .boundaryUnit(SparsitySchedule.BoundaryUnit.STEPS)
            .initialSparsity(0)
            .ultraSparsity(0.9)
            .finalSparsity(0.5)
            .warmup(100, 300)
            .restoration(700, 900)
            .warmupShape(RampShape.LINEAR)
            .restorationShape(RampShape.LINEAR)
            .build();
    for (long t = 0; t < 1000; t += 37) {
      assertEquals(lin.sparsityAt(t), abs.sparsityAt(t), 1e-12);
    }
  }

  @Test
  void badSchedulesAreRejectedWithClearMessages() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsitySchedule.builder().ultraSparsity(0.9).warmup(0.5, 0.3).build());
    assertTrue(e.getMessage().contains("phases out of order"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsitySchedule.builder().ultraSparsity(1.0).build());
    assertTrue(
        e.getMessage().contains("ultraSparsity = 1.0") && e.getMessage().contains("[0, 1)"),
        e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> SparsitySchedule.builder().initialSparsity(-0.1).build());
    assertThrows(
        IllegalArgumentException.class, () -> SparsitySchedule.builder().warmup(0, 1.5).build());
    MstConfig c = MstConfig.preset("mst");
    c.setDeltaT(0);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    e = assertThrows(IllegalArgumentException.class, c::validate);
    assertTrue(e.getMessage().contains("deltaT = 0"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> MstConfig.fromYaml("growMode: SIDEWAYS\n"));
    assertTrue(
        e.getMessage().contains("growMode = SIDEWAYS") && e.getMessage().contains("MIXED"),
        e.getMessage());
    c.setDeltaT(100);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setPruneInterval(-1);
    e = assertThrows(IllegalArgumentException.class, c::validate);
    assertTrue(
        e.getMessage().contains("pruneInterval = -1") && e.getMessage().contains(">= 0"),
        e.getMessage());
    // prune-only cannot restore
    MstConfig g = MstConfig.preset("mst");
    g.setGrowMode("NONE");
    assertThrows(IllegalArgumentException.class, g::validate);
  }

  @Test
  void dropFractionKinds() {
    SparsitySchedule s = threePhase(RampShape.LINEAR);
    DropFraction cos = new DropFraction(DropFraction.Kind.COSINE, 0.3, 1.0);
    assertEquals(0.3, cos.at(0, s), 1e-12);
    assertEquals(0.15, cos.at(500, s), 1e-12);
    assertEquals(0.0, new DropFraction(DropFraction.Kind.COSINE, 0.3, 0.75).at(800, s));
    assertEquals(0.3, new DropFraction(DropFraction.Kind.CONSTANT, 0.3, 1).at(999, s));
    DropFraction rs = new DropFraction(DropFraction.Kind.COSINE_RESTART, 0.3, 1.0);
    assertEquals(0.3, rs.at(300, s), 1e-12, "restarts at the ultra phase");
    assertEquals(0.3, rs.at(700, s), 1e-12, "restarts at restoration");
    assertEquals(0.15, rs.at(500, s), 1e-12, "midway through ultra (300..700)");
  }

  private static float[] randn(int n, long seed) {
    Random r = new Random(seed);
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = (float) r.nextGaussian();
    }
    return a;
  }

  @Test
  void pruneStepsFollowARisingTargetByMagnitudeBetweenTopologyUpdates() {
    MstConfig c = MstConfig.preset("mst");
    c.setSchedule(threePhase(RampShape.CUBIC));
    c.setDeltaT(100);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setPruneInterval(10);
    c.setDistribution("UNIFORM");
    MstCore core = new MstCore(c.withTotalSteps(1000));
    assertEquals(10, MstConfig.fromYaml(c.toYaml()).getPruneInterval(), "YAML round trip");
    core.register("a", 40, 50);
    core.register("b", 50, 20);
    Map<String, float[]> w = Map.of("a", randn(2000, 5), "b", randn(1000, 6));
    core.initialize(w);
    List<UpdateRecord> log = new ArrayList<>();
    core.addRecordListener(log::add);
    int pruneSteps = 0;
    for (long t = 0; t < 1000; t++) {
      core.stepDone(t, 0.0);
      boolean prune = core.isPruneStep(t);
      if (prune) {
        assertFalse(core.isTopologyStep(t));
        long rngBefore = core.state().getRngState();
        Map<String, LayerMask> before = new HashMap<>(core.masks());
        Map<String, TopologyUpdater.Result> res = core.pruneToSchedule(t, w);
        assertEquals(rngBefore, core.state().getRngState(), "prune steps draw no random numbers");
        double target = c.getSchedule().withTotalSteps(1000).sparsityAt(t + 1);
        for (Map.Entry<String, TopologyUpdater.Result> e : res.entrySet()) {
          TopologyUpdater.Result r = e.getValue();
          LayerMask m = r.mask;
          assertEquals(0, r.grown);
          assertEquals(
              target, 1.0 - (double) m.activeUnits() / m.unitCount(), 1.0 / m.unitCount() + 1e-9);
          // only previously active units are dropped, and the smallest magnitudes go first
          float[] x = w.get(e.getKey());
          double minKept = Double.MAX_VALUE;
          double maxDropped = 0;
          for (int i = 0; i < x.length; i++) {
            assertFalse(m.isUnitActive(i) && !before.get(e.getKey()).isUnitActive(i));
            if (m.isUnitActive(i)) {
              minKept = Math.min(minKept, Math.abs(x[i]));
            } else if (before.get(e.getKey()).isUnitActive(i)) {
              maxDropped = Math.max(maxDropped, Math.abs(x[i]));
            }
          }
          assertTrue(minKept >= maxDropped);
        }
        pruneSteps++;
      } else if (core.isTopologyStep(t)) {
        core.updateTopology(t, w, w);
      }
    }
    // warm-up [100, 300): prune steps at 110..190 and 210..290 (100 and 200 are topology updates);
    // none in
    // the ultra phase (target flat) or restoration (target falls: growth needs the topology update)
    assertEquals(18, pruneSteps);
    assertEquals(18, log.stream().filter(r -> UpdateRecord.PRUNE.equals(r.kind)).count());
    assertEquals(9, core.topologyUpdates());
    assertTrue(
        log.stream()
            .filter(r -> UpdateRecord.PRUNE.equals(r.kind))
            .allMatch(r -> r.grownTotal == 0 && r.step > 100 && r.step < 300));
  }

  @Test
  void updateScaleFadesLinearlyToOneOverItsWindow() {
    MstConfig c = MstConfig.preset("mst-gpt-mini");
    c.setSchedule(SparsitySchedule.constant(0.75));
    c.setDistribution("UNIFORM");
    c.setUpdateScaleExponent(1.0);
    c.setUpdateScaleFadeStart(0.4);
    c.setUpdateScaleFadeEnd(0.8);
    MstConfig rt = MstConfig.fromYaml(c.toYaml());
    assertEquals(0.4, rt.getUpdateScaleFadeStart());
    assertEquals(0.8, rt.getUpdateScaleFadeEnd());
    assertEquals(c, rt, "YAML round trip");
    MstCore core = new MstCore(c.withTotalSteps(100));
    core.register("a", 40, 50);
    core.initialize(Map.of("a", randn(2000, 7)));
    double density = core.masks().get("a").density();
    assertEquals(0.25, density, 1e-9);
    Map<Long, Double> seen = new HashMap<>();
    for (long t = 0; t < 100; t++) {
      seen.put(t, core.updateScale("a"));
      core.stepDone(t, 0.0);
    }
    assertEquals(4.0, seen.get(0L), 1e-9, "full alpha before the fade: 0.25^-1");
    assertEquals(4.0, seen.get(39L), 1e-9);
    assertEquals(Math.pow(0.25, -0.5), seen.get(60L), 1e-9, "half way through the fade: alpha 0.5");
    assertEquals(1.0, seen.get(80L), 1e-12, "faded out: the optimizer's own step");
    assertEquals(1.0, seen.get(99L), 1e-12);
    for (long t = 41; t < 80; t++) {
      assertTrue(seen.get(t) < seen.get(t - 1), "strictly falling inside the fade at step " + t);
    }
    MstConfig noFade = c.copy();
    noFade.setUpdateScaleFadeStart(1.0);
    noFade.setUpdateScaleFadeEnd(1.0);
    assertEquals(1.0, noFade.updateScaleExponentAt(99, 100), "default: no fade");
    MstConfig bad = c.copy();
    bad.setUpdateScaleFadeEnd(0.3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(
        e.getMessage().contains("updateScaleFadeEnd = 0.3")
            && e.getMessage().contains("[updateScaleFadeStart = 0.4, 1]"),
        e.getMessage());
    bad.setUpdateScaleFadeStart(-0.1);
    e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(e.getMessage().contains("updateScaleFadeStart = -0.1"), e.getMessage());
  }

  @Test
  void topologyCountsFollowTheAuthorsFormula() {
    SplitMix64 rng = new SplitMix64(1);
    LayerMask m =
        LayerMask.random("w", 40, 50, MaskPattern.UNSTRUCTURED, 0.2, rng); // n_on = 400, N = 2000
    float[] w = randn(2000, 2);
    float[] g = randn(2000, 3);
    // same sparsity: n_prune = int(400 * 0.3) = 120, n_grow = 120
    TopologyUpdater.Result r = TopologyUpdater.update(m, w, g, 0.8, 0.3, GrowMode.GRADIENT, 3, rng);
    assertEquals(400, r.mask.activeUnits());
    // rising target 0.8 -> 0.9: diff = 200 > int(400*0.1) -> prune 200, grow 0
    TopologyUpdater.Result up =
        TopologyUpdater.update(m, w, g, 0.9, 0.1, GrowMode.GRADIENT, 3, rng);
    assertEquals(200, up.mask.activeUnits());
    assertEquals(200, up.pruned);
    assertEquals(0, up.grown);
    // kept ones are the largest magnitudes
    double minKept = Double.MAX_VALUE;
    double maxDropped = 0;
    for (int i = 0; i < 2000; i++) {
      if (up.mask.isUnitActive(i)) {
        minKept = Math.min(minKept, Math.abs(w[i]));
      } else if (m.isUnitActive(i)) {
        maxDropped = Math.max(maxDropped, Math.abs(w[i]));
      }
    }
    assertTrue(minKept >= maxDropped);
    // falling target 0.8 -> 0.7 (restoration): n_prune = int(400*0.3) = 120, n_grow = 120 + 200
    TopologyUpdater.Result down = TopologyUpdater.update(m, w, g, 0.7, 0.3, GrowMode.MIXED, 3, rng);
    assertEquals(600, down.mask.activeUnits());
    // zeroed weights are not counted: newly active elements are exactly the grown set
    assertEquals(down.grown, down.newlyActiveElements.length);
    for (int e : down.newlyActiveElements) {
      assertFalse(m.isUnitActive(e));
      assertTrue(down.mask.isUnitActive(e));
    }
  }

  @Test
  void gradientGrowthPicksLargestGradientsAndRandomIsSeeded() {
    SplitMix64 rng = new SplitMix64(5);
    LayerMask m = LayerMask.random("w", 20, 20, MaskPattern.UNSTRUCTURED, 0.5, rng);
    float[] w = randn(400, 6);
    float[] g = randn(400, 7);
    TopologyUpdater.Result r =
        TopologyUpdater.update(m, w, g, 0.5, 0.2, GrowMode.GRADIENT, 3, new SplitMix64(0));
    // every grown element has |g| >= every non-kept candidate's |g|
    double minGrown = Double.MAX_VALUE;
    for (int e : r.newlyActiveElements) {
      minGrown = Math.min(minGrown, Math.abs(g[e]));
    }
    for (int i = 0; i < 400; i++) {
      if (!r.mask.isUnitActive(i)) {
        assertTrue(Math.abs(g[i]) <= minGrown + 1e-9);
      }
    }
    TopologyUpdater.Result a =
        TopologyUpdater.update(m, w, null, 0.5, 0.2, GrowMode.RANDOM, 3, new SplitMix64(9));
    TopologyUpdater.Result b =
        TopologyUpdater.update(m, w, null, 0.5, 0.2, GrowMode.RANDOM, 3, new SplitMix64(9));
    assertEquals(a.mask, b.mask);
    assertThrows(
        IllegalArgumentException.class,
        () ->
            TopologyUpdater.update(m, w, null, 0.5, 0.2, GrowMode.GRADIENT, 3, new SplitMix64(9)));
  }

  @Test
  void blockAndNmPatternsKeepTheirStructure() {
    SplitMix64 rng = new SplitMix64(3);
    LayerMask m = LayerMask.random("b", 64, 32, MaskPattern.block(16), 0.5, rng); // 8 blocks
    assertEquals(4, m.activeUnits());
    float[] w = randn(64 * 32, 1);
    TopologyUpdater.Result r =
        TopologyUpdater.update(m, w, randn(64 * 32, 2), 0.75, 0.0, GrowMode.GRADIENT, 3, rng);
    assertEquals(2, r.mask.activeUnits());
    float[] em = r.mask.toElementMask();
    for (int br = 0; br < 4; br++) {
      for (int bc = 0; bc < 2; bc++) {
        float v = em[(br * 16) * 32 + bc * 16];
        for (int i = 0; i < 16; i++) {
          for (int j = 0; j < 16; j++) {
            assertEquals(v, em[(br * 16 + i) * 32 + bc * 16 + j]);
          }
        }
      }
    }
    assertThrows(
        IllegalArgumentException.class, () -> LayerMask.dense("x", 10, 16, MaskPattern.block(16)));
    LayerMask nm = LayerMask.random("nm", 8, 6, MaskPattern.nm(2, 4), 0.5, rng);
    TopologyUpdater.Result rn =
        TopologyUpdater.update(nm, randn(48, 4), randn(48, 5), 0.5, 0.5, GrowMode.MIXED, 3, rng);
    for (int c = 0; c < 6; c++) {
      for (int g0 = 0; g0 < 8; g0 += 4) {
        int k = 0;
        for (int r0 = g0; r0 < g0 + 4; r0++) {
          k += rn.mask.isKept(r0, c) ? 1 : 0;
        }
        assertEquals(2, k);
      }
    }
    assertEquals("block16", MaskPattern.parse("block16").toString());
    assertEquals("2:4", MaskPattern.parse("2:4").toString());
    assertThrows(IllegalArgumentException.class, () -> MaskPattern.parse("diagonal"));
  }

  /** Fraction of all weights kept by per-layer densities {@code d}. */
  private static double keptFraction(Map<String, int[]> shapes, Map<String, Double> d) {
    double kept = 0;
    double total = 0;
    for (var e : shapes.entrySet()) {
      double n = e.getValue()[0] * (double) e.getValue()[1];
      kept += n * d.get(e.getKey());
      total += n;
    }
    return kept / total;
  }

  @Test
  void erAllocationMatchesBudgetAndFallsBackToDense() {
    Map<String, int[]> shapes = new LinkedHashMap<>();
    shapes.put("small", new int[] {8, 8});
    shapes.put("big", new int[] {512, 512});
    shapes.put("wide", new int[] {128, 2048});
    Map<String, Double> d =
        DensityAllocator.allocate(shapes, Map.of(), 0.1, DensityDistribution.ER);
    assertEquals(0.1, keptFraction(shapes, d), 1e-9);
    assertEquals(1.0, d.get("small"), "tiny layer would exceed density 1 -> dense");
    // ER ratio between non-dense layers = ratio of (r+c)/(r c)
    double ratio = d.get("big") / d.get("wide");
    assertEquals((1024.0 / (512 * 512)) / (2176.0 / (128 * 2048)), ratio, 1e-9);
    assertEquals(
        0.1,
        DensityAllocator.allocate(shapes, Map.of(), 0.1, DensityDistribution.UNIFORM).get("big"));
  }

  @Test
  void resetCorrectionFollowsEachBlocksLastResetAndSurvivesTheState() {
    MstConfig c = MstConfig.preset("mst");
    c.setSchedule(threePhase(RampShape.LINEAR));
    c.setPattern("block8");
    c.setDistribution("UNIFORM");
    c.setResetBiasCorrection(true);
    MstCore core = new MstCore(c.withTotalSteps(1000));
    core.register("a", 16, 32);
    core.register("b", 32, 8);
    Map<String, float[]> w = Map.of("a", randn(512, 8), "b", randn(256, 9));
    core.initialize(w);
    assertNull(core.resetCorrection("a", 0, 0.9, 0.999), "nothing reset yet");
    Map<String, Map<Integer, Long>> lastReset =
        new HashMap<>(); // unit -> step, tracked from the masks
    for (long t = 0; t < 750; t++) {
      core.stepDone(t, 0.0);
      if (core.isMaskStep(t)) {
        Map<String, LayerMask> before = new HashMap<>(core.masks());
        core.updateMasks(t, w, w);
        for (String k : List.of("a", "b")) {
          LayerMask m0 = before.get(k), m1 = core.masks().get(k);
          for (int u = 0; u < m1.unitCount(); u++) {
            if (m0.isUnitActive(u) != m1.isUnitActive(u)) {
              lastReset.computeIfAbsent(k, x -> new HashMap<>()).put(u, t);
            }
          }
        }
      }
    }
    long t = 750;
    double global = Math.sqrt(1 - Math.pow(0.999, t + 1)) / (1 - Math.pow(0.9, t + 1));
    int young = 0;
    for (String k : List.of("a", "b")) {
      float[] f = core.resetCorrection(k, t, 0.9, 0.999);
      LayerMask m = core.masks().get(k);
      for (int r = 0; r < m.rows(); r++) {
        for (int col = 0; col < m.cols(); col++) {
          Long reset = lastReset.getOrDefault(k, Map.of()).get(m.unitOf(r, col));
          double expect =
              reset == null
                  ? 1.0
                  : Math.sqrt(1 - Math.pow(0.999, t - reset))
                      / (1 - Math.pow(0.9, t - reset))
                      / global;
          assertEquals(expect, f[r * m.cols() + col], 1e-6, k + "[" + r + ", " + col + "]");
          young += reset == null ? 0 : 1;
        }
      }
    }
    assertTrue(young > 0, "the schedule reset some blocks");
    MstCore back = new MstCore(c.withTotalSteps(1000));
    back.register("a", 16, 32);
    back.register("b", 32, 8);
    back.restore(MstState.fromJson(core.state().toJson()));
    for (String k : List.of("a", "b")) {
      assertArrayEquals(
          core.resetCorrection(k, t, 0.9, 0.999), back.resetCorrection(k, t, 0.9, 0.999), k);
    }
    MstState wrongUnits = MstState.fromJson(core.state().toJson());
    wrongUnits.getUnitResetSteps().put("a", wrongUnits.getUnitResetSteps().get("b"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> back.restore(wrongUnits));
    assertTrue(
        e.getMessage().contains("unitResetSteps of a") && e.getMessage().contains("8 units"),
        e.getMessage());
  }

  @Test
  void densityWeightsShiftTheBudgetBetweenLayers() {
    Map<String, int[]> shapes = new LinkedHashMap<>();
    shapes.put("h0_attn_Wq", new int[] {128, 128});
    shapes.put("h0_fc_W", new int[] {128, 512});
    shapes.put("h0_proj_W", new int[] {512, 128});
    MstConfig c = MstConfig.preset("mst-gpt-mini");
    c.setDistribution("UNIFORM");
    c.setDensityWeights(new LinkedHashMap<>(Map.of(".*_(fc|proj)_W", 2.0)));
    MstConfig rt = MstConfig.fromYaml(c.toYaml());
    assertEquals(c, rt, "YAML round trip");
    assertEquals(2.0, rt.densityWeightOf("h3_fc_W"));
    assertEquals(1.0, rt.densityWeightOf("h3_attn_Wk"));
    Map<String, Double> w = new HashMap<>();
    shapes.keySet().forEach(k -> w.put(k, c.densityWeightOf(k)));
    for (DensityDistribution kind : DensityDistribution.values()) {
      Map<String, Double> plain = DensityAllocator.allocate(shapes, Map.of(), 0.2, kind);
      Map<String, Double> d = DensityAllocator.allocate(shapes, Map.of(), 0.2, kind, w);
      assertEquals(0.2, keptFraction(shapes, d), 1e-9, kind + ": same budget");
      assertEquals(
          2.0 * plain.get("h0_fc_W") / plain.get("h0_attn_Wq"),
          d.get("h0_fc_W") / d.get("h0_attn_Wq"),
          1e-9,
          kind + ": the weight doubles the MLP's share");
      assertTrue(d.get("h0_attn_Wq") < plain.get("h0_attn_Wq"));
    }
    // a weight that would push a layer past dense caps it there and re-solves the rest
    Map<String, Double> capped =
        DensityAllocator.allocate(
            shapes, Map.of(), 0.6, DensityDistribution.UNIFORM, Map.of("h0_fc_W", 10.0));
    assertEquals(1.0, capped.get("h0_fc_W"));
    MstConfig bad = c.copy();
    bad.setDensityWeights(new LinkedHashMap<>(Map.of(".*fc.*", -1.0)));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(e.getMessage().contains("densityWeights[.*fc.*] = -1.0"), e.getMessage());
    bad.setDensityWeights(new LinkedHashMap<>(Map.of("(", 1.0)));
    e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(e.getMessage().contains("densityWeights"), e.getMessage());
  }

  @Test
  void attentionScheduleAndDensity() {
    SparsitySchedule s =
        MstConfig.preset("mst")
            .withTotalSteps(200)
            .getSchedule(); // WARMUP [0, 30), ULTRA [30, 170)
    AttentionSchedule a = MstConfig.preset("mst").getAttention();
    assertEquals("dense", a.patternFor(0, 0, s));
    assertEquals("local:16", a.patternFor(3, 100, s));
    AttentionSchedule every = new AttentionSchedule();
    every.setRules(
        List.of(
            new AttentionSchedule.Rule(List.of(Phase.ULTRA), "every:2", "dense"),
            new AttentionSchedule.Rule(List.of(Phase.ULTRA), "all", "local:32")));
    every.validate();
    assertEquals("dense", every.patternFor(2, 100, s));
    assertEquals("local:32", every.patternFor(1, 100, s));
    assertEquals(1.0, AttentionDensity.of("dense", 128, 16));
    double local = AttentionDensity.of("local:16", 128, 16);
    // block level: diagonal blocks (8 x 136) + 7 sub-diagonal blocks (256 each) over 128*129/2
    assertEquals((8 * 136.0 + 7 * 256.0) / (128 * 129 / 2.0), local, 1e-12);
    assertTrue(AttentionDensity.of("local:16+strided:16", 128, 16) >= local);
    assertThrows(IllegalArgumentException.class, () -> AttentionDensity.of("banana:3", 128, 16));
  }

  @Test
  void attentionRuleWindows() {
    SparsitySchedule s =
        MstConfig.preset("mst").withTotalSteps(200).getSchedule(); // ULTRA = [30, 170)
    AttentionSchedule a = new AttentionSchedule();
    a.setRules(
        List.of(
            new AttentionSchedule.Rule(List.of(), "all", "local:16").window(null, 0.4),
            new AttentionSchedule.Rule(List.of(Phase.ULTRA), "all", "local:32").window(0.4, 0.6)));
    a.validateAgainst(s);
    assertEquals(
        "local:16", a.patternFor(0, 0, s), "no phase list = every phase; window open at the start");
    assertEquals("local:16", a.patternFor(1, 79, s));
    assertEquals("local:32", a.patternFor(1, 80, s), "from is inclusive");
    assertEquals("local:32", a.patternFor(1, 119, s));
    assertEquals("dense", a.patternFor(1, 120, s), "until is exclusive");
    assertEquals("dense", a.patternFor(1, 199, s));
    // the core reports the windowed pattern per step
    MstConfig c = MstConfig.preset("mst");
    c.setAttention(a);
    MstCore core = new MstCore(c.withTotalSteps(200));
    core.setAttentionLayers(2);
    assertEquals(List.of("local:32", "local:32"), core.attentionPatterns(100));
    assertEquals(List.of("dense", "dense"), core.attentionPatterns(150));
    // round trip through YAML keeps the windows
    MstConfig back = MstConfig.fromYaml(c.toYaml());
    assertEquals(c.getAttention(), back.getAttention());
    assertEquals(0.4, back.getAttention().getRules().get(1).getFrom());
    // STEPS unit: window bounds are steps
    SparsitySchedule st =
        SparsitySchedule.builder()
            .boundaryUnit(SparsitySchedule.BoundaryUnit.STEPS)
            .initialSparsity(0)
            .ultraSparsity(0.9)
            .finalSparsity(0.9)
            .warmup(0, 10)
            .restoration(100, 100)
            .totalSteps(100)
            .build();
    AttentionSchedule b = new AttentionSchedule();
    b.setRules(List.of(new AttentionSchedule.Rule(List.of(), "all", "local:16").window(5.0, 50.0)));
    b.validateAgainst(st);
    assertEquals("dense", b.patternFor(0, 4, st));
    assertEquals("local:16", b.patternFor(0, 5, st));
    assertEquals("dense", b.patternFor(0, 50, st));
    // bad windows are rejected with the field named
    AttentionSchedule bad = new AttentionSchedule();
    bad.setRules(
        List.of(new AttentionSchedule.Rule(List.of(), "all", "local:16").window(0.6, 0.4)));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(e.getMessage().contains("until"), e.getMessage());
    bad.setRules(
        List.of(new AttentionSchedule.Rule(List.of(), "all", "local:16").window(-1.0, null)));
    assertThrows(IllegalArgumentException.class, bad::validate);
    bad.setRules(
        List.of(new AttentionSchedule.Rule(List.of(), "all", "local:16").window(null, 1.5)));
    e = assertThrows(IllegalArgumentException.class, () -> bad.validateAgainst(s));
    assertTrue(e.getMessage().contains("FRACTION"), e.getMessage());
  }

  @Test
  void flopCounterDenseAndSparse() {
    FlopCounter f = FlopCounter.forGpt(2, 64, 4, 32, 50, 2);
    double dense = f.denseStepFlops();
    Map<String, Double> half = new HashMap<>();
    for (FlopCounter.Linear l : f.linears()) {
      half.put(l.name, 0.5);
    }
    double sparse = f.stepFlops(half, null, Set.of());
    double linearDense = 0;
    for (FlopCounter.Linear l : f.linears()) {
      linearDense += 6.0 * 64 * l.in * l.out;
    }
    assertEquals(linearDense / 2, dense - sparse, 1e-6);
    // dense dW on a topology step adds back F*(1-d) for that layer
    double topo = f.stepFlops(half, null, Set.of("0_qkv"));
    assertEquals(2.0 * 64 * 64 * 192 * 0.5, topo - sparse, 1e-6);
  }

  @Test
  void presetsLoadAndRoundTrip() {
    for (String p : MstConfig.PRESETS) {
      MstConfig c = MstConfig.preset(p);
      assertEquals(p, c.getName());
      assertFalse(c.getSource().isEmpty());
      assertEquals(c, MstConfig.fromJson(c.toJson()), p + " JSON round trip");
      assertEquals(c, MstConfig.fromYaml(c.toYaml()), p + " YAML round trip");
    }
    assertThrows(IllegalArgumentException.class, () -> MstConfig.preset("nope"));
  }

  @Test
  void coreStateRoundTripAndDeterminism() {
    MstConfig cfg = MstConfig.preset("mst").withTotalSteps(1000);
    MstCore a = new MstCore(cfg);
    a.register("l0", 32, 64);
    a.register("l1", 64, 32);
    a.initialize(null);
    float[] w0 = randn(2048, 1);
    float[] g0 = randn(2048, 2);
    Map<String, float[]> w = Map.of("l0", w0, "l1", randn(2048, 3));
    Map<String, float[]> g = Map.of("l0", g0, "l1", randn(2048, 4));
    for (long t = 0; t < 300; t++) {
      a.stepDone(t, 1.0);
      if (a.isTopologyStep(t)) {
        a.updateTopology(t, w, g);
      }
    }
    MstState s = a.state();
    MstState back = MstState.fromJson(s.toJson());
    assertEquals(s, back);
    MstCore b = new MstCore(cfg);
    b.register("l0", 32, 64);
    b.register("l1", 64, 32);
    b.restore(back);
    for (long t = 300; t < 500; t++) {
      a.stepDone(t, 1.0);
      b.stepDone(t, 1.0);
      if (a.isTopologyStep(t)) {
        a.updateTopology(t, w, g);
        b.updateTopology(t, w, g);
      }
    }
    assertEquals(a.masks(), b.masks());
    // ultra phase reached: global sparsity near 0.9
    double dens = a.snapshotRecord().globalDensity;
    assertEquals(0.1, dens, 0.01);
  }
}
