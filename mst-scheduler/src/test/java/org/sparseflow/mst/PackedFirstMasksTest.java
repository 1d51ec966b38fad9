package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.Phase;
import org.sparseflow.mst.core.RampShape;
import org.sparseflow.mst.core.SparsitySchedule;

/**
 * Packed storage packed at MST's own first masks ({@link MstListener#firstMasks}) starts where
 * masked storage starts: the same masks and the same random draws after them, so a dense warm-up
 * runs on packed storage (all blocks, dense-sized arrays until the ultra-sparse phase).
 */
class PackedFirstMasksTest {

  static final int STEPS = 40;
  static final String[] LAYERS = {"w0", "w1"};

  /** in [n, 32] -> w0 (32 x 64) -> tanh -> w1 (64 x 16); MSE; plain dense weights. */
  static SameDiff denseMlp() {
    Nd4j.getRandom().setSeed(5);
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.FLOAT, -1, 32);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 16);
    SDVariable w0 = sd.var("w0", Nd4j.randn(DataType.FLOAT, 32, 64).muli(0.2));
    SDVariable w1 = sd.var("w1", Nd4j.randn(DataType.FLOAT, 64, 16).muli(0.2));
    SDVariable y = sd.math().tanh(in.mmul(w0)).mmul("y", w1);
    sd.loss().meanSquaredError("loss", label, y, null);
    return PackedSameDiffMstTest.withAdam(sd);
  }

  /** Warm-up from {@code initial} to 0.8 until step 12, ultra to 28, restoration to 0.6 by 36. */
  static MstConfig config(double initial, String initialMask, String grow) {
    MstConfig c = MstConfig.preset("mst");
    c.setSchedule(
        SparsitySchedule.builder()
            .initialSparsity(initial)
            .ultraSparsity(0.8)
            .finalSparsity(0.6)
            .warmup(0.0, 0.3)
            .restoration(0.7, 0.9)
            .warmupShape(RampShape.LINEAR)
            .build());
    c.setPattern("block8");
    c.setInclude(List.of(LAYERS));
    c.setDeltaT(4);
    c.setTopologyUpdates(0);
    c.setInitialMask(initialMask);
    c.setGrowMode(grow);
    return c.withTotalSteps(STEPS);
  }

  static SameDiff packedAtFirstMasks(MstConfig c) {
    SameDiff sd = denseMlp();
    SparsityConfig packed =
        SparsityConfig.builder()
            .pattern("block8")
            .storage("packed")
            .sparsity(0.5)
            .keepFirstDense(false)
            .keepLastDense(false)
            .include(LAYERS)
            .build();
    Sparsify.apply(packed, sd, MstListener.firstMasks(c, sd));
    return sd;
  }

  /** Per step: the loss on batch 0 after the step. */
  static List<Double> train(SameDiff sd, List<DataSet> d, List<Integer> caps) {
    List<Double> losses = new ArrayList<>();
    for (int t = 0; t < STEPS; t++) {
      sd.fit(d.get(t));
      INDArray out = sd.output(Map.of("in", d.get(0).getFeatures()), "y").get("y");
      losses.add(out.squaredDistance(d.get(0).getLabels()) / out.length());
      if (caps != null) {
        caps.add((int) (sd.getArrForVarName("w0_packed").length() / 64));
      }
    }
    return losses;
  }

  @Test
  void aDenseWarmUpRunsOnPackedStorageAndTracksTheMaskedRun() {
    MstConfig c = config(0.0, "magnitude", "gradient");
    SameDiff packed = packedAtFirstMasks(c);
    // 32 x 64 at block 8: 32 blocks, all kept for the dense start
    assertEquals(32L * 64, packed.getArrForVarName("w0_packed").length());
    MstListener mp = new MstListener(c).addTo(packed);
    SameDiff masked = denseMlp();
    MstListener mm = new MstListener(c).addTo(masked);
    List<DataSet> d = PackedSameDiffMstTest.data();
    List<Integer> caps = new ArrayList<>();
    List<Double> lp = train(packed, d, caps);
    List<Double> lm = train(masked, d, null);
    for (int t = 0; t < 4; t++) {
      assertEquals(lm.get(t), lp.get(t), 1e-4 * lm.get(t), "loss after step " + t);
    }
    SparsitySchedule s = c.getSchedule();
    for (int t = 0; t < STEPS; t++) {
      Phase p = s.phaseAt(Math.min(t + 1, STEPS - 1));
      if (p == Phase.WARMUP) {
        assertEquals(32, caps.get(t), "dense-sized during the warm-up, step " + t);
      } else if (p == Phase.ULTRA) {
        assertTrue(caps.get(t) < 10, "ultra-sparse phase holds its share only: " + caps.get(t));
      }
    }
    for (String w : LAYERS) {
      LayerMask a = mp.core().masks().get(w);
      LayerMask b = mm.core().masks().get(w);
      assertEquals(b.density(), a.density(), 1e-9, "density of " + w);
    }
    assertTrue(lp.get(STEPS - 1) < lp.get(0), "trains: " + lp.get(0) + " -> " + lp.get(STEPS - 1));
  }

  @Test
  void packedAndMaskedStartFromTheSameMasksAndRandomDraws() {
    for (String init : new String[] {"random", "magnitude"}) {
      MstConfig c = config(0.0, init, "random").withSparseStart();
      SameDiff packed = packedAtFirstMasks(c);
      MstListener mp = new MstListener(c).addTo(packed);
      SameDiff masked = denseMlp();
      MstListener mm = new MstListener(c).addTo(masked);
      List<DataSet> d = PackedSameDiffMstTest.data();
      for (int t = 0; t <= 4; t++) { // through the first mask step (t = 4): random growth
        packed.fit(d.get(t));
        masked.fit(d.get(t));
        for (String w : LAYERS) {
          assertEquals(
              mm.core().masks().get(w),
              mp.core().masks().get(w),
              init + " init: mask of " + w + " after step " + t);
        }
      }
      assertTrue(mp.core().topologyUpdates() >= 1, "a mask step happened");
    }
  }
}
