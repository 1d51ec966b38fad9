package org.sparseflow.ops.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.imports.converters.ImportClassMapping;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.ops.backend.SparseFlowBackend;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/** SameDiff integration of {@link SparseMatmulOp}: backend, gradients, fit, save/load. */
class SparseMatmulOpTest {

  @Test
  void sparseFlowBackendAndExecutionerAreActive() {
    assertInstanceOf(SparseFlowBackend.class, Nd4j.getBackend());
    assertInstanceOf(SparseFlowOpExecutioner.class, Nd4j.getExecutioner());
    SparseFlowOps.registerAll();
    assertTrue(ImportClassMapping.getOpNameMapping().containsKey(SparseMatmulOp.OP_NAME));
    assertTrue(ImportClassMapping.getOpNameMapping().containsKey(SparseMatmulBpOp.OP_NAME));
  }

  private static SameDiff graph(DataType dt, SparseMask mask, boolean withBias, long seed) {
    Nd4j.getRandom().setSeed(seed);
    SameDiff sd = SameDiff.create();
    int nIn = (int) mask.rows(), nOut = (int) mask.cols();
    SDVariable x = sd.placeHolder("x", dt, -1, nIn);
    SDVariable label = sd.placeHolder("label", dt, -1, nOut);
    SDVariable w = sd.var("w", Nd4j.randn(dt, nIn, nOut).muli(0.3));
    SDVariable b = withBias ? sd.var("b", Nd4j.randn(dt, nOut).muli(0.1)) : null;
    SDVariable y = SparseFlowOps.sparseMatmul(sd, "y", x, w, mask, b, false);
    SDVariable out = sd.math().tanh(y);
    sd.loss().meanSquaredError("loss", label, out, null);
    return sd;
  }

  @ParameterizedTest
  @ValueSource(strings = {"block8", "unstructured", "2:4"})
  void gradientsMatchFiniteDifferencesInDouble(String pattern) {
    SparseMask mask = PatternSpec.parse(pattern).random(8, 16, 0.5, 11);
    SameDiff sd = graph(DataType.DOUBLE, mask, true, 5);
    Map<String, INDArray> ph = new HashMap<>();
    ph.put("x", Nd4j.randn(DataType.DOUBLE, 3, 8));
    ph.put("label", Nd4j.randn(DataType.DOUBLE, 3, 16));
    Map<String, INDArray> analytic = sd.calculateGradients(ph, "w", "b", "x");
    for (String name : new String[] {"w", "b", "x"}) {
      INDArray target = name.equals("x") ? ph.get("x") : sd.getVariable(name).getArr();
      INDArray g = analytic.get(name);
      double eps = 1e-6;
      Random pick = new Random(name.hashCode());
      for (int trial = 0; trial < 10; trial++) {
        long i = pick.nextInt((int) target.length()); // a sample of entries keeps the test fast
        double orig = target.getDouble(i);
        target.putScalar(i, orig + eps);
        double plus = loss(sd, ph);
        target.putScalar(i, orig - eps);
        double minus = loss(sd, ph);
        target.putScalar(i, orig);
        double numeric = (plus - minus) / (2 * eps);
        double a = g.getDouble(i);
        double denom = Math.max(Math.abs(numeric) + Math.abs(a), 1e-8);
        assertTrue(
            Math.abs(a - numeric) / denom < 1e-5 || Math.abs(a - numeric) < 1e-9,
            name + "[" + i + "] analytic " + a + " numeric " + numeric);
      }
    }
  }

  private static double loss(SameDiff sd, Map<String, INDArray> ph) {
    return sd.output(ph, "loss").get("loss").getDouble(0);
  }

  @Test
  void gradientOfWeightIsZeroOutsideMaskAndMatchesReference() {
    SparseMask mask = PatternSpec.parse("block8").random(16, 32, 0.4, 3);
    SameDiff sd = graph(DataType.DOUBLE, mask, false, 1);
    INDArray x = Nd4j.randn(DataType.DOUBLE, 7, 16);
    INDArray label = Nd4j.randn(DataType.DOUBLE, 7, 32);
    Map<String, INDArray> grads = sd.calculateGradients(Map.of("x", x, "label", label), "w", "x");
    INDArray m = mask.toDense(DataType.DOUBLE);
    assertEquals(0.0, grads.get("w").mul(m.rsub(1.0)).norm1Number().doubleValue(), 0.0);
    // reference through stock ops: y = x (W o M)
    SameDiff ref = SameDiff.create();
    SDVariable rx = ref.placeHolder("x", DataType.DOUBLE, -1, 16);
    SDVariable rl = ref.placeHolder("label", DataType.DOUBLE, -1, 32);
    SDVariable rw = ref.var("w", sd.getVariable("w").getArr().dup());
    SDVariable ry = rx.mmul(rw.mul(ref.constant(m)));
    ref.loss().meanSquaredError("loss", rl, ref.math().tanh(ry), null);
    Map<String, INDArray> refGrads =
        ref.calculateGradients(Map.of("x", x, "label", label), "w", "x");
    assertTrue(grads.get("w").equalsWithEps(refGrads.get("w"), 1e-10));
    assertTrue(grads.get("x").equalsWithEps(refGrads.get("x"), 1e-10));
  }

  @Test
  void fitTrainsOnlyKeptWeightsAndSurvivesSaveLoad(@TempDir File dir) throws Exception {
    SparseMask mask = PatternSpec.parse("block16").random(32, 64, 0.25, 7);
    SameDiff sd = graph(DataType.FLOAT, mask, true, 2);
    INDArray wBefore = sd.getVariable("w").getArr().dup();
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(3e-2))
            .dataSetFeatureMapping("x")
            .dataSetLabelMapping("label")
            .build());
    Nd4j.getRandom().setSeed(9);
    INDArray x = Nd4j.randn(DataType.FLOAT, 64, 32);
    INDArray teacher =
        Nd4j.randn(DataType.FLOAT, 32, 64).muli(mask.toDense(DataType.FLOAT)).muli(0.2);
    DataSet ds = new DataSet(x, Transforms.tanh(x.mmul(teacher)));
    double first =
        sd.output(Map.of("x", x, "label", ds.getLabels()), "loss").get("loss").getDouble(0);
    for (int i = 0; i < 25; i++) {
      sd.fit(ds);
    }
    double last =
        sd.output(Map.of("x", x, "label", ds.getLabels()), "loss").get("loss").getDouble(0);
    assertTrue(last < 0.5 * first, "loss " + first + " -> " + last);
    INDArray w = sd.getVariable("w").getArr();
    INDArray pruned = mask.toDense(DataType.FLOAT).rsub(1.0);
    assertEquals(
        0.0, w.sub(wBefore).mul(pruned).norm1Number().doubleValue(), 0.0, "pruned weights moved");
    assertTrue(
        w.sub(wBefore).mul(mask.toDense(DataType.FLOAT)).norm1Number().doubleValue() > 0,
        "kept weights moved");

    File f = new File(dir, "sparse.sd");
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    INDArray out1 = sd.output(Map.of("x", x), "y").get("y");
    INDArray out2 = loaded.output(Map.of("x", x), "y").get("y");
    assertEquals(out1, out2);
    assertTrue(
        loaded.getOps().values().stream().anyMatch(o -> o.getOp() instanceof SparseMatmulOp));
    // the loaded graph keeps training
    for (int i = 0; i < 3; i++) {
      loaded.fit(ds);
    }
    assertEquals(
        0.0,
        loaded.getVariable("w").getArr().sub(wBefore).mul(pruned).norm1Number().doubleValue(),
        0.0);
  }

  @Test
  void rank3InputIsAppliedToTheLastDimension() {
    SparseMask mask = PatternSpec.parse("block8").random(16, 24, 0.5, 4);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, -1, 3, 16);
    SDVariable w = sd.var("w", Nd4j.randn(DataType.DOUBLE, 16, 24));
    SparseFlowOps.sparseMatmul(sd, "y", x, w, mask, null, false);
    INDArray xv = Nd4j.randn(DataType.DOUBLE, 2, 3, 16);
    INDArray y = sd.output(Map.of("x", xv), "y").get("y");
    INDArray ref =
        xv.reshape(6, 16).mmul(w.getArr().mul(mask.toDense(DataType.DOUBLE))).reshape(2, 3, 24);
    assertTrue(ref.equalsWithEps(y, 1e-12));
  }

  @Test
  void maskThatIsNotBlockStructuredIsRejected() {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, 16);
    SDVariable w = sd.var("w", Nd4j.rand(DataType.FLOAT, 16, 16));
    INDArray m = Nd4j.ones(DataType.FLOAT, 16, 16);
    m.putScalar(3, 3, 0.0);
    SDVariable y =
        SparseFlowOps.sparseMatmul(
            sd, "y", x, w, sd.constant("m", m), PatternSpec.block(8), null, false);
    Exception e =
        assertThrows(
            Exception.class, () -> sd.output(Map.of("x", Nd4j.rand(DataType.FLOAT, 2, 16)), "y"));
    Throwable t = e;
    while (t.getCause() != null && !(t instanceof IllegalArgumentException)) {
      t = t.getCause();
    }
    assertInstanceOf(IllegalArgumentException.class, t);
    assertTrue(t.getMessage().contains("partially kept"), t.getMessage());
  }

  /** The op instances of the graph's gradient function of class {@code type}. */
  private static <T> List<T> gradOps(SameDiff sd, Class<T> type) {
    List<T> out = new ArrayList<>();
    for (var op : sd.getFunction("grad").getOps().values()) {
      if (type.isInstance(op.getOp())) {
        out.add(type.cast(op.getOp()));
      }
    }
    return out;
  }

  @Test
  void cachedLayoutAndDenseWeightGradSwitchDriveTheKernels() {
    SparseMask mask = PatternSpec.parse("block8").random(16, 32, 0.5, 3);
    SameDiff sd = graph(DataType.DOUBLE, mask, false, 1);
    INDArray x = Nd4j.randn(DataType.DOUBLE, 5, 16);
    INDArray label = Nd4j.randn(DataType.DOUBLE, 5, 32);
    Map<String, INDArray> ph = Map.of("x", x, "label", label);
    INDArray m = mask.toDense(DataType.DOUBLE);
    INDArray masked = sd.calculateGradients(ph, "w").get("w").dup();
    assertEquals(0.0, masked.mul(m.rsub(1.0)).norm1Number().doubleValue(), 0.0);

    // dense dW on: the same values inside the mask, nonzero outside it
    for (SparseMatmulBpOp bp : gradOps(sd, SparseMatmulBpOp.class)) {
      assertTrue(!bp.denseWeightGrad());
      bp.setDenseWeightGrad(true);
    }
    INDArray dense = sd.calculateGradients(ph, "w").get("w").dup();
    assertTrue(dense.mul(m).equalsWithEps(masked, 1e-12));
    assertTrue(dense.mul(m.rsub(1.0)).norm1Number().doubleValue() > 0);

    // a cached layout replaces the mask input: the complement layout computes the complement
    BlockMask layout = (BlockMask) mask;
    boolean[] flags = layout.blockFlags();
    boolean[] flipped = new boolean[flags.length];
    for (int i = 0; i < flags.length; i++) {
      flipped[i] = !flags[i];
    }
    var complement = BlockMask.of(16, 32, 8, flipped);
    for (SparseMatmulBpOp bp : gradOps(sd, SparseMatmulBpOp.class)) {
      bp.setDenseWeightGrad(false);
      bp.setBlockLayout(complement);
      assertEquals(complement, bp.blockLayout());
    }
    for (SparseMatmulOp op : gradOps(sd, SparseMatmulOp.class)) {
      op.setBlockLayout(complement);
    }
    INDArray other = sd.calculateGradients(ph, "w").get("w");
    assertEquals(0.0, other.mul(m).norm1Number().doubleValue(), 0.0);
    assertTrue(other.norm1Number().doubleValue() > 0);
    // a layout with another block size is rejected, naming both sizes
    var wrong = BlockMask.of(16, 32, 16, new boolean[2]);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> gradOps(sd, SparseMatmulOp.class).get(0).setBlockLayout(wrong));
    assertTrue(e.getMessage().contains("16") && e.getMessage().contains("8"), e.getMessage());
  }
}
