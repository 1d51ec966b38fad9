package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/** Linear layers in third-party styles: x·Wᵀ, transposeResult, rank-3 tensordot, tied embedding. */
class LinearStylesTest {

  private static long sparseOps(SameDiff sd) {
    return sd.getOps().values().stream().filter(o -> o.getOp() instanceof SparseMatmulOp).count();
  }

  private static double maxDiff(INDArray a, INDArray b) {
    return a.sub(b).amaxNumber().doubleValue();
  }

  @Test
  void transposedWeightsBecomeSparseComputeXTimesMaskedWTransposedAndTrain() {
    SameDiff sd = ThirdPartyGraphs.torchStyleMlp();
    SparsityConfig cfg =
        SparsityConfig.fromYaml(
            "pattern: block8\nsparsity: 0.5\nkeepFirstDense: false\nkeepLastDense: true\n");
    SparsifyReport r = Sparsify.apply(cfg, sd).report();
    assertEquals(Status.SPARSE, r.entry("l0_weight").status(), r.toString());
    assertEquals(Status.SPARSE, r.entry("l1_weight").status(), r.toString());
    assertTrue(r.entry("l1_weight").originalType().contains("x·Wᵀ"), r.toString());
    assertEquals(0.5, r.entry("l1_weight").measuredDensity(), 1e-9, r.toString());
    assertEquals(Status.DENSE, r.entry("l2_weight").status(), r.toString());
    assertTrue(r.entry("l2_weight").reason().contains("keepLastDense"), r.toString());
    assertEquals(2, sparseOps(sd));

    Nd4j.getRandom().setSeed(3);
    INDArray x = Nd4j.randn(DataType.DOUBLE, 5, 16);
    INDArray w0 = sd.getArrForVarName("l0_weight"), w1 = sd.getArrForVarName("l1_weight");
    INDArray m1 = sd.getArrForVarName("l1_weight_mask");
    assertEquals(0.0, maxDiff(w1, w1.mul(m1)), 0.0, "W is zero outside its mask");
    INDArray h0 = Nd4j.math().tanh(x.mmul(w0.transpose()));
    INDArray ref = h0.mmul(w1.transpose());
    INDArray out = sd.outputSingle(Map.of("in", x), "l1_mm");
    assertEquals(0.0, maxDiff(out, ref), 1e-10);
    SameDiff copy = sd.dup();
    Sparsify.densify(copy);
    assertEquals(0, sparseOps(copy));
    assertEquals(0.0, maxDiff(copy.outputSingle(Map.of("in", x), "l1_mm"), ref), 1e-10);

    INDArray y = Nd4j.randn(DataType.DOUBLE, 5, 4);
    for (int i = 0; i < 5; i++) {
      sd.fit(new DataSet(x, y));
    }
    INDArray pruned = m1.rsub(1.0);
    assertEquals(0.0, sd.getArrForVarName("l1_weight").mul(pruned).amaxNumber().doubleValue(), 0);
    assertTrue(maxDiff(sd.getArrForVarName("l1_weight"), w1.dup().muli(0)) > 0, "kept weights");
  }

  @Test
  void transposeResultAndTransposeAOnRank2AreRewrittenExactly() {
    Nd4j.getRandom().setSeed(4);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, 6, 16);
    SDVariable w0 = ThirdPartyGraphs.weight(sd, "w0", 16, 16, 0.3);
    SDVariable w1 = ThirdPartyGraphs.weight(sd, "w1", 16, 8, 0.3);
    SDVariable yT = sd.mmul("yT", x, w0, false, false, true); // (x W0)^T: [16, 6]
    sd.mmul("z", yT, w1, true, false, false); // (yT)^T W1 = x W0 W1
    INDArray xin = Nd4j.randn(DataType.DOUBLE, 6, 16);
    SparsityConfig cfg =
        SparsityConfig.fromYaml(
            "pattern: unstructured\nsparsity: 0.5\nkeepFirstDense: false\nkeepLastDense: false\n");
    SparsifyReport r = Sparsify.apply(cfg, sd).report();
    assertEquals(Status.SPARSE, r.entry("w0").status(), r.toString());
    assertEquals(Status.SPARSE, r.entry("w1").status(), r.toString());
    INDArray ref = xin.mmul(sd.getArrForVarName("w0")).mmul(sd.getArrForVarName("w1"));
    assertEquals(0.0, maxDiff(sd.outputSingle(Map.of("x", xin), "z"), ref), 1e-10);
  }

  @Test
  void rank3TensordotLayersAndATiedEmbeddingShareOneMaskPerWeight() {
    int vocab = 16, d = 16;
    SameDiff sd = ThirdPartyGraphs.tiedEmbeddingModel(vocab, d);
    SparsityConfig defaults = SparsityConfig.fromYaml("pattern: block8\nsparsity: 0.5\n");
    SameDiff kept = ThirdPartyGraphs.tiedEmbeddingModel(vocab, d);
    SparsifyReport rd = Sparsify.apply(defaults, kept).report();
    assertEquals("tied embedding", rd.entry("tok_emb").originalType(), rd.toString());
    assertEquals(Status.DENSE, rd.entry("tok_emb").status(), rd.toString());
    assertTrue(rd.entry("tok_emb").reason().contains("exclude"), rd.toString());

    SparsityConfig all =
        SparsityConfig.fromYaml(
            "pattern: block8\nsparsity: 0.5\nkeepFirstDense: false\nkeepLastDense: false\n"
                + "exclude: []\n");
    SparsifyReport r = Sparsify.apply(all, sd).report();
    assertEquals(Status.SPARSE, r.entry("ff_in").status(), r.toString());
    assertEquals(Status.SPARSE, r.entry("ff_out").status(), r.toString());
    assertEquals("tensordot", r.entry("ff_in").originalType(), r.toString());
    assertEquals(Status.SPARSE, r.entry("tok_emb").status(), r.toString());
    assertTrue(r.entry("tok_emb").reason().contains("tied"), r.toString());
    long masksOfE =
        sd.getVariables().keySet().stream()
            .filter(n -> n.startsWith("tok_emb"))
            .filter(n -> sd.getVariable(n).getVariableType() == VariableType.CONSTANT)
            .count();
    assertEquals(
        1, masksOfE, "one mask constant for the tied weight: " + sd.getVariables().keySet());
    assertEquals(3, sparseOps(sd));

    INDArray ids = Nd4j.createFromArray(1, 5, 7, 3, 12);
    INDArray e = sd.getArrForVarName("tok_emb"), mask = sd.getArrForVarName("tok_emb_mask");
    assertEquals(0.0, maxDiff(e, e.mul(mask)), 0.0);
    INDArray h = Nd4j.create(DataType.DOUBLE, 5, d);
    for (int i = 0; i < 5; i++) {
      h.putRow(i, e.getRow(ids.getInt(i)));
    }
    INDArray a = Nd4j.math().tanh(h.mmul(sd.getArrForVarName("ff_in")));
    INDArray h2 = a.mmul(sd.getArrForVarName("ff_out")).addi(h);
    INDArray ref = h2.mmul(e.transpose());
    assertEquals(0.0, maxDiff(sd.outputSingle(Map.of("ids", ids), "logits"), ref), 1e-10);

    // a second inference runs too
    assertEquals(0.0, maxDiff(sd.outputSingle(Map.of("ids", ids), "logits"), ref), 1e-10);
    // densify: stock ops only, same logits
    Sparsify.densify(sd);
    assertEquals(0, sparseOps(sd));
    assertEquals(0.0, maxDiff(sd.outputSingle(Map.of("ids", ids), "logits"), ref), 1e-10);
  }
}
