package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;

/**
 * MST on a graph written PyTorch-style (x·Wᵀ with W [out, in]), which Sparsify rewrites as sparse
 * matmuls of transpose(W) and transpose(W_mask): MST drives W and W_mask, and the op computes with
 * MST's current mask after topology updates.
 */
class TransposedWeightsMstTest {
  static final int STEPS = 16;

  static SameDiff torchStyleMlp() {
    Nd4j.getRandom().setSeed(31);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("in", DataType.FLOAT, -1, 32);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 32);
    SDVariable h = x;
    for (int i = 0; i < 3; i++) {
      SDVariable w = sd.var("fc" + i + "_weight", Nd4j.randn(DataType.FLOAT, 32, 32).muli(0.2));
      h = sd.mmul("fc" + i, h, w, false, true, false);
      h = i < 2 ? sd.nn.tanh(h) : h;
    }
    sd.loss().meanSquaredError("loss", label, h, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  @Test
  void mstDrivesTheMaskOfATransposedWeight() {
    SameDiff sd = torchStyleMlp();
    String weights = "fc\\d_weight";
    Sparsify.apply(
        SparsityConfig.builder()
            .pattern("block16")
            .density(0.5)
            .include(weights)
            .keepFirstDense(false)
            .keepLastDense(false)
            .build(),
        sd);
    MstConfig c = MstConfig.preset("mst-gpt-mini-block16");
    c.setInclude(List.of(weights));
    c.setDeltaT(4);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setPruneInterval(2);
    MstListener mst = new MstListener(c.withTotalSteps(STEPS));
    mst.addTo(sd);
    Nd4j.getRandom().setSeed(5);
    INDArray xin = Nd4j.randn(DataType.FLOAT, 8, 32), y = Nd4j.randn(DataType.FLOAT, 8, 32);
    INDArray firstMask = sd.getArrForVarName("fc1_weight_mask").dup();
    for (int step = 0; step < STEPS; step++) {
      sd.fit(new DataSet(xin, y));
    }
    boolean changed = false;
    for (Map.Entry<String, LayerMask> e : mst.core().masks().entrySet()) {
      INDArray mask = sd.getArrForVarName(e.getKey() + "_mask");
      float[] want = e.getValue().toElementMask();
      assertArrayEquals(want, mask.dup('c').data().asFloat(), 0f, "mask constant of " + e.getKey());
      INDArray w = sd.getArrForVarName(e.getKey());
      assertEquals(0.0, w.mul(mask.rsub(1.0)).amaxNumber().doubleValue(), 0.0, e.getKey());
      changed |= e.getKey().equals("fc1_weight") && !mask.equals(firstMask);
    }
    assertTrue(changed, "MST changed the topology of fc1_weight");
    INDArray w0 = sd.getArrForVarName("fc0_weight"), w1 = sd.getArrForVarName("fc1_weight");
    INDArray m1 = sd.getArrForVarName("fc1_weight_mask");
    INDArray h0 = Nd4j.math().tanh(xin.mmul(w0.transpose()));
    INDArray ref = h0.mmul(w1.mul(m1).transpose());
    INDArray out = sd.outputSingle(Map.of("in", xin), "fc1");
    assertEquals(0.0, out.sub(ref).amaxNumber().doubleValue(), 1e-4, "op uses MST's mask");
  }
}
