package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.layers.nn.PackedAttentionTest.conf;
import static org.sparseflow.layers.nn.PackedAttentionTest.data;
import static org.sparseflow.layers.nn.PackedAttentionTest.net;

import java.util.List;
import java.util.Map;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.NoOp;
import org.sparseflow.layers.api.PackedModels;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;

/** Packed attention projections with spare block slots, relaid out in place and resized. */
class PackedAttentionSlotsTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  /** 16x16 block8 projections: 4 blocks each, 2 kept; {@code caps} slots (null: the kept). */
  private static MultiLayerConfiguration withCaps(int[] caps, boolean adam) {
    MultiLayerConfiguration c = conf("packed", null, adam ? new Adam(0.02) : new NoOp());
    ((CausalSelfAttentionLayer) c.getConf(0).getLayer()).setProjectionCapacities(caps);
    return c;
  }

  @Test
  void spareSlotsChangeNothingAndPassTheGradientCheck() {
    MultiLayerNetwork exact = net(conf("packed", null, new NoOp()));
    MultiLayerNetwork spare = net(withCaps(new int[] {3, 4, 2, 3}, false));
    List<PackedSparseParam> e = SparseParams.findPacked(exact);
    List<PackedSparseParam> s = SparseParams.findPacked(spare);
    assertEquals(List.of(2, 2, 2, 2), e.stream().map(PackedSparseParam::slots).toList());
    assertEquals(List.of(3, 4, 2, 3), s.stream().map(PackedSparseParam::slots).toList());
    for (int i = 0; i < 4; i++) {
      s.get(i).keptValues().assign(e.get(i).packedValues());
      assertEquals(0.0, spareNorm(s.get(i)), "spare slots start at zero");
    }
    for (String k : exact.paramTable().keySet()) {
      if (!k.startsWith("0_W")) {
        spare.setParam(k, exact.getParam(k));
      }
    }
    INDArray[] d = data(5);
    assertTrue(exact.output(d[0]).equalsWithEps(spare.output(d[0]), 1e-12));
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig().net(spare).input(d[0]).labels(d[1])));
  }

  @Test
  void relayoutGrowthScoresAndRebuildWithOtherSlots() {
    MultiLayerNetwork n = net(withCaps(new int[] {3, 0, 0, 0}, true));
    INDArray[] d = data(7);
    n.fit(d[0], d[1]);
    PackedSparseParam q = SparseParams.findPacked(n).get(0);
    int[] kept = q.layout().keptRowMajor();
    int fresh = 0;
    while (fresh == kept[0] || fresh == kept[1]) {
      fresh++;
    }
    int[] next = {kept[1], fresh};
    java.util.Arrays.sort(next);
    INDArray keptBlock = PackedBlockLinear.block(q.packedValues(), 1, 8).dup();
    q.relayout(PackedLayout.of(16, 16, 8, next));
    assertArrayEquals(next, q.layout().keptRowMajor());
    assertEquals(
        keptBlock, PackedBlockLinear.block(q.packedValues(), q.layout().slotOf(kept[1]), 8));
    assertEquals(
        0.0,
        PackedBlockLinear.block(q.packedValues(), q.layout().slotOf(fresh), 8)
            .norm1Number()
            .doubleValue());
    assertEquals(3, q.slots());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseParams.findPacked(n)
                    .get(1)
                    .relayout(PackedLayout.of(16, 16, 8, new int[] {0, 1, 2})));
    assertTrue(e.getMessage().contains("at most 2 blocks"), e.getMessage());
    double[] sq = new double[4];
    q.setGrowthScores(sq);
    n.setInput(d[0]);
    n.setLabels(d[1]);
    n.computeGradientAndScore();
    // a kept block's dense gradient is its packed gradient
    INDArray g = n.gradient().getGradientFor("0_Wq");
    for (int u : q.layout().keptRowMajor()) {
      double n2 = PackedBlockLinear.block(g, q.layout().slotOf(u), 8).norm2Number().doubleValue();
      assertEquals(n2 * n2, sq[u], 1e-9 * (1 + n2 * n2), "block " + u);
    }
    assertTrue(java.util.Arrays.stream(sq).sum() > 0, java.util.Arrays.toString(sq));
    q.setGrowthScores(null);
    MultiLayerNetwork big =
        (MultiLayerNetwork) PackedModels.withSlots(n, Map.of("0_Wq", 4, "0_Wo", 4));
    assertEquals(
        List.of(4, 2, 2, 4),
        SparseParams.findPacked(big).stream().map(PackedSparseParam::slots).toList());
    assertTrue(n.output(d[0]).equalsWithEps(big.output(d[0]), 1e-12), "same outputs");
    for (int s = 0; s < 2; s++) {
      n.fit(d[0], d[1]);
      big.fit(d[0], d[1]);
      assertEquals(n.score(), big.score(), 1e-12, "training goes on identically");
    }
    MultiLayerConfiguration back =
        MultiLayerConfiguration.fromJson(big.getLayerWiseConfigurations().toJson());
    assertEquals(big.getLayerWiseConfigurations(), back);
    assertArrayEquals(
        new int[] {4, 2, 2, 4},
        ((CausalSelfAttentionLayer) back.getConf(0).getLayer()).getProjectionCapacities());
  }

  @Test
  void badCapacitiesAreRefused() {
    for (int[] bad : new int[][] {{1, 2, 2, 2}, {2, 2, 2, 5}, {2, 2, 2}}) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> net(withCaps(bad, true)));
      assertTrue(
          e.getMessage().contains("blockCapacity")
              || e.getMessage().contains("projectionCapacities"),
          e.getMessage());
    }
    MultiLayerConfiguration m = conf("masked", null, new NoOp());
    ((CausalSelfAttentionLayer) m.getConf(0).getLayer())
        .setProjectionCapacities(new int[] {2, 2, 2, 2});
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> net(m));
    assertTrue(e.getMessage().contains("projectionCapacities"), e.getMessage());
  }

  private static double spareNorm(PackedSparseParam p) {
    int kept = p.layout().keptBlocks();
    if (p.slots() == kept) {
      return 0.0;
    }
    return PackedBlockLinear.blocks(p.packedValues(), kept, p.slots() - kept, 8)
        .norm1Number()
        .doubleValue();
  }
}
