package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * A SameDiff MLP written the way public code writes it: a learned input gain, then {@code
 * sd.nn.linear} (op {@code xw_plus_b}) layers. (An embedding lookup, {@code sd.gather} on an INT
 * placeholder, would be the natural non-linear weight here, but SameDiff M2.1's fit fails on it
 * with "One of Input arguments was closed before call" with or without SparseFlow.) Linear weights
 * the config selects become sparse with their bias kept, the graph computes {@code x (W o M) + b}
 * and trains, and every trainable rank-2 weight has a report line.
 */
class LinearLayerSparsifierTest {

  private static SameDiff linearMlp() {
    Nd4j.getRandom().setSeed(5);
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.DOUBLE, -1, 16);
    SDVariable label = sd.placeHolder("label", DataType.DOUBLE, -1, 4);
    SDVariable gain = sd.var("gain", Nd4j.ones(DataType.DOUBLE, 1, 16));
    SDVariable x = in.mul(gain);
    SDVariable w0 = sd.var("fc0_w", Nd4j.randn(DataType.DOUBLE, 16, 32).muli(0.3));
    SDVariable b0 = sd.var("fc0_b", Nd4j.randn(DataType.DOUBLE, 32).muli(0.1));
    SDVariable w1 = sd.var("fc1_w", Nd4j.randn(DataType.DOUBLE, 32, 32).muli(0.2));
    SDVariable b1 = sd.var("fc1_b", Nd4j.randn(DataType.DOUBLE, 32).muli(0.1));
    SDVariable w2 = sd.var("head_w", Nd4j.randn(DataType.DOUBLE, 32, 4).muli(0.2));
    SDVariable b2 = sd.var("head_b", Nd4j.zeros(DataType.DOUBLE, 4));
    SDVariable h = sd.nn.relu(sd.nn.linear("fc0", x, w0, b0), 0);
    h = sd.nn.relu(sd.nn.linear("fc1", h, w1, b1), 0);
    SDVariable logits = sd.nn.linear("logits", h, w2, b2);
    sd.loss().softmaxCrossEntropy("loss", label, logits, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  @Test
  void linearLayersBecomeSparseKeepTheirBiasTrainAndEveryWeightIsReported() {
    SameDiff sd = linearMlp();
    SparsityConfig cfg =
        SparsityConfig.fromYaml(
            "pattern: unstructured\nsparsity: 0.5\nkeepFirstDense: false\nkeepLastDense: true\n");
    Nd4j.getRandom().setSeed(9);
    INDArray xin = Nd4j.randn(DataType.DOUBLE, 6, 16);
    SparsifyReport r = Sparsify.apply(cfg, sd).report();

    assertEquals(Status.SPARSE, r.entry("fc0_w").status(), r.toString());
    assertEquals(Status.SPARSE, r.entry("fc1_w").status(), r.toString());
    assertEquals("xw_plus_b", r.entry("fc1_w").originalType(), r.toString());
    assertEquals(0.5, r.entry("fc1_w").measuredDensity(), 0.02, r.toString());
    assertEquals(Status.DENSE, r.entry("head_w").status(), r.toString());
    assertTrue(r.entry("head_w").reason().contains("keepLastDense"), r.toString());
    SparsifyReport.Entry gain = r.entry("gain");
    assertNotNull(gain, "the gain is a trainable rank-2 weight:\n" + r);
    assertEquals(Status.DENSE, gain.status());
    assertTrue(gain.reason().contains("(multiply)"), r.toString());
    assertEquals(
        2, sd.getOps().values().stream().filter(o -> o.getOp() instanceof SparseMatmulOp).count());

    // the rewritten graph computes x (W o M) + b with the bias kept
    INDArray out = sd.outputSingle(Map.of("in", xin), "fc1");
    INDArray x0 = xin;
    INDArray h0 =
        Nd4j.nn()
            .relu(
                x0.mmul(sd.getArrForVarName("fc0_w")).addRowVector(sd.getArrForVarName("fc0_b")),
                0);
    INDArray ref = h0.mmul(sd.getArrForVarName("fc1_w")).addRowVector(sd.getArrForVarName("fc1_b"));
    assertEquals(0.0, out.sub(ref).amaxNumber().doubleValue(), 1e-10);

    INDArray labels = Nd4j.zeros(DataType.DOUBLE, 6, 4);
    for (int i = 0; i < 6; i++) {
      labels.putScalar(i, i % 4, 1.0);
    }
    DataSet ds = new DataSet(xin, labels);
    INDArray pruned = sd.getArrForVarName("fc1_w").eq(0.0).castTo(DataType.DOUBLE);
    INDArray b1Before = sd.getArrForVarName("fc1_b").dup();
    for (int i = 0; i < 5; i++) {
      sd.fit(ds);
    }
    assertEquals(
        0.0,
        sd.getArrForVarName("fc1_w").mul(pruned).amaxNumber().doubleValue(),
        0.0,
        "pruned weights stay zero");
    assertTrue(
        sd.getArrForVarName("fc1_b").sub(b1Before).amaxNumber().doubleValue() > 0,
        "the bias trains");
  }
}
