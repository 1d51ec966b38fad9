package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.SparseMatmulOp;

class SameDiffSparsifierTest {

  static SameDiff mlp() {
    Nd4j.getRandom().setSeed(11);
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.FLOAT, -1, 16);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 4);
    SDVariable w0 = sd.var("w0", Nd4j.randn(DataType.FLOAT, 16, 32).muli(0.3));
    SDVariable w1 = sd.var("w1", Nd4j.randn(DataType.FLOAT, 32, 32).muli(0.2));
    SDVariable w2 = sd.var("w2", Nd4j.randn(DataType.FLOAT, 32, 4).muli(0.2));
    SDVariable b1 = sd.zero("b1", DataType.FLOAT, 32);
    SDVariable h = sd.nn().relu(in.mmul(w0), 0);
    h = sd.nn().relu(h.mmul(w1).add(b1), 0);
    SDVariable logits = h.mmul("logits", w2);
    sd.loss().softmaxCrossEntropy("loss", label, logits, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  static DataSet data(long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray x = Nd4j.randn(DataType.FLOAT, 32, 16);
    INDArray y = Nd4j.zeros(DataType.FLOAT, 32, 4);
    for (int i = 0; i < 32; i++) {
      y.putScalar(
          i,
          x.getDouble(i, 0) > 0 ? (x.getDouble(i, 1) > 0 ? 0 : 1) : (x.getDouble(i, 2) > 0 ? 2 : 3),
          1.0);
    }
    return new DataSet(x, y);
  }

  @Test
  void rewritesSelectedMatmulsTrainsAndSurvivesSaveLoad(@TempDir File dir) throws Exception {
    SameDiff sd = mlp();
    INDArray x = data(99).getFeatures();
    INDArray before = sd.outputSingle(Map.of("in", x), "logits");
    SparsityConfig cfg =
        SparsityConfig.builder()
            .sparsity(0.5)
            .keepFirstDense(false)
            .initialMask(InitialMask.MAGNITUDE)
            .build();
    SparsifyReport r = Sparsify.apply(cfg, sd).report();
    assertEquals(Status.SPARSE, r.entry("w0").status());
    assertEquals(Status.SPARSE, r.entry("w1").status());
    assertEquals(Status.DENSE, r.entry("w2").status());
    assertTrue(r.entry("w2").reason().contains("keepLastDense"));
    assertEquals(0.5, r.entry("w1").measuredDensity(), 0.01);
    long sparseOps =
        sd.getOps().values().stream().filter(o -> o.getOp() instanceof SparseMatmulOp).count();
    assertEquals(2, sparseOps);
    // names kept; output changes only because of pruning
    INDArray after = sd.outputSingle(Map.of("in", x), "logits");
    assertArrayEquals(before.shape(), after.shape());

    INDArray m1 = sd.getArrForVarName("w1_mask").dup();
    for (int i = 0; i < 40; i++) {
      sd.fit(data(i % 4));
    }
    INDArray w1 = sd.getArrForVarName("w1");
    assertEquals(
        0,
        w1.mul(m1.rsub(1.0)).neq(0).castTo(DataType.INT32).sumNumber().intValue(),
        "pruned weights moved");
    assertTrue(w1.mul(m1).neq(0).castTo(DataType.INT32).sumNumber().intValue() > 0);

    File f = new File(dir, "sd.fb");
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    assertEquals(
        sd.outputSingle(Map.of("in", x), "logits"), loaded.outputSingle(Map.of("in", x), "logits"));
    loaded.fit(data(5)); // keeps training after load

    INDArray sparseOut = sd.outputSingle(Map.of("in", x), "logits");
    Sparsify.densify(sd);
    assertEquals(
        0, sd.getOps().values().stream().filter(o -> o.getOp() instanceof SparseMatmulOp).count());
    assertEquals(sparseOut, sd.outputSingle(Map.of("in", x), "logits"));
  }

  @Test
  void refusesGraphWithGradientsAndUnknownIncludes() {
    SameDiff sd = mlp();
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Sparsify.apply(SparsityConfig.builder().include("nothing_.*").build(), sd));
    assertTrue(e.getMessage().contains("nothing_.*"), e.getMessage());
    sd.fit(data(1));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Sparsify.apply(SparsityConfig.builder().build(), sd));
    assertTrue(e.getMessage().contains("before training"), e.getMessage());
  }
}
