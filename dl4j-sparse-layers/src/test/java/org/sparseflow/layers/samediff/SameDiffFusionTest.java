package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.transforms.custom.LayerNorm;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;
import org.nd4j.linalg.api.ops.impl.transforms.strict.GELU;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.layers.config.FuseSettings;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.FusedGeluOp;
import org.sparseflow.ops.samediff.FusedLayerNormOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/** Sparsify's fusion of layer_norm / gelu in SameDiff graphs, densify, the report and save/load. */
class SameDiffFusionTest {
  private static final int T = 4, C = 16, V = 6;

  /** A pre-norm transformer MLP block: ln1 -> fc + bias -> gelu -> proj -> residual -> ln2. */
  static SameDiff block(DataType dt) {
    Nd4j.getRandom().setSeed(21);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", dt, -1, T, C);
    SDVariable label = sd.placeHolder("label", dt, -1, V);
    SDVariable h =
        sd.nn()
            .layerNorm(
                "ln1", x, sd.var("ln1_g", Nd4j.ones(dt, C)), sd.zero("ln1_b", dt, C), false, 2)
            .reshape(-1, C);
    SDVariable fc = sd.var("w_fc", Nd4j.randn(dt, C, 4 * C).muli(0.3));
    SDVariable a =
        sd.nn().gelu("act", h.mmul(fc).add(sd.var("b_fc", Nd4j.randn(dt, 4 * C).muli(0.1))));
    SDVariable m = a.mmul(sd.var("w_proj", Nd4j.randn(dt, 4 * C, C).muli(0.2)));
    SDVariable x2 = x.add(m.reshape(-1, T, C));
    SDVariable ln2 =
        sd.nn()
            .layerNorm(
                "ln2",
                x2,
                sd.var("ln2_g", Nd4j.rand(dt, C).addi(0.5)),
                sd.var("ln2_b", Nd4j.randn(dt, C).muli(0.1)),
                false,
                2);
    SDVariable logits = ln2.reshape(-1, C).mmul("logits", sd.var("w_out", Nd4j.randn(dt, C, V)));
    sd.loss().softmaxCrossEntropy("loss", label, logits, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("x")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  static DataSet data(DataType dt, long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray y = Nd4j.zeros(dt, 3 * T, V);
    for (int i = 0; i < 3 * T; i++) {
      y.putScalar(i, i % V, 1.0);
    }
    return new DataSet(Nd4j.randn(dt, 3, T, C), y);
  }

  /** Selects no weight, so only the fusion changes the graph. */
  static SparsityConfig fuseOnly(FuseSettings fuse) {
    SparsityConfig c = new SparsityConfig();
    c.setInclude(List.of("x")); // a placeholder: matches a name, selects no weight
    c.setFuse(fuse);
    return c.validate("<test>");
  }

  private static long count(SameDiff sd, Class<?> type) {
    return sd.getOps().values().stream().filter(o -> type.isInstance(o.getOp())).count();
  }

  @Test
  void fusesLayerNormsAndGeluKeepsOutputsAndDensifyRestoresStockOps() {
    for (DataType dt : new DataType[] {DataType.FLOAT, DataType.DOUBLE}) {
      SameDiff sd = block(dt);
      Map<String, INDArray> ph = Map.of("x", data(dt, 3).getFeatures());
      INDArray before = sd.outputSingle(ph, "logits");
      SparsifyReport r = Sparsify.apply(fuseOnly(null), sd).report();
      for (String ln : new String[] {"ln1", "ln2"}) {
        assertEquals(Status.FUSED, r.entry(ln).status(), r.toString());
        assertEquals(FusedLayerNormOp.OP_NAME, r.entry(ln).resultType());
      }
      // fusions change the graph but select nothing: a config that makes nothing sparse is
      // still noticed (the sparsify command's exit code 3)
      assertTrue(r.changedAnything());
      assertFalse(r.selectedAnything(), r.toString());
      assertEquals(FusedGeluOp.OP_NAME, r.entry("act").resultType(), r.toString());
      assertEquals(2, count(sd, FusedLayerNormOp.class));
      assertEquals(1, count(sd, FusedGeluOp.class));
      assertEquals(0, count(sd, LayerNorm.class) + count(sd, GELU.class));
      double tol = dt == DataType.DOUBLE ? 1e-10 : 1e-4;
      INDArray fused = sd.outputSingle(ph, "logits");
      assertTrue(fused.equalsWithEps(before, tol), dt + " fused outputs differ");
      Sparsify.densify(sd);
      assertEquals(0, count(sd, FusedLayerNormOp.class) + count(sd, FusedGeluOp.class));
      assertEquals(2, count(sd, LayerNorm.class));
      assertEquals(1, count(sd, GELU.class));
      assertTrue(sd.outputSingle(ph, "logits").equalsWithEps(before, tol), dt + " densified");
      sd.fit(data(dt, 4)); // the densified graph still trains
    }
  }

  @Test
  void fuseSwitchesAreHonoured() {
    SameDiff none = block(DataType.FLOAT);
    SparsifyReport r = Sparsify.apply(fuseOnly(FuseSettings.none()), none).report();
    assertEquals(0, count(none, FusedLayerNormOp.class) + count(none, FusedGeluOp.class));
    assertEquals(null, r.entry("ln1"));
    SameDiff geluOnly = block(DataType.FLOAT);
    Sparsify.apply(fuseOnly(new FuseSettings(false, true, false)), geluOnly);
    assertEquals(0, count(geluOnly, FusedLayerNormOp.class));
    assertEquals(1, count(geluOnly, FusedGeluOp.class));
  }

  @Test
  void layerNormOverAnotherAxisIsReportedDense() {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, T, C);
    SDVariable g = sd.var("g", Nd4j.ones(DataType.FLOAT, T));
    sd.nn().layerNorm("mid", x, g, sd.zero("b", DataType.FLOAT, T), false, 1);
    SparsifyReport r = Sparsify.apply(fuseOnly(null), sd).report();
    assertEquals(Status.DENSE, r.entry("mid").status());
    assertTrue(r.entry("mid").reason().contains("axis 1 of a rank-3 input"), r.toString());
    assertEquals(1, count(sd, LayerNorm.class));
  }

  @Test
  void sparseAndFusedGraphTrainsAndResumesBitIdenticallyAfterSaveLoad(@TempDir File dir)
      throws Exception {
    SameDiff sd = block(DataType.FLOAT);
    SparsityConfig cfg = sparse(new FuseSettings(true, true, true));
    SparsifyReport r = Sparsify.apply(cfg, sd).report();
    assertEquals(Status.SPARSE, r.entry("w_fc").status());
    assertEquals(2, count(sd, SparseMatmulOp.class), r.toString());
    assertEquals(2, count(sd, FusedLayerNormOp.class), r.toString());
    assertTrue(r.toString().contains("fuse.biasAdd"), r.toString());
    sd.fit(data(DataType.FLOAT, 5));
    File f = new File(dir, "fused.sd");
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    for (int step = 0; step < 2; step++) {
      DataSet ds = data(DataType.FLOAT, 10 + step);
      sd.fit(ds);
      loaded.fit(ds);
    }
    for (String v : new String[] {"w_fc", "w_proj", "ln1_g", "ln2_b", "w_out"}) {
      assertEquals(sd.getVariable(v).getArr(), loaded.getVariable(v).getArr(), v);
    }
    INDArray fc = sd.getVariable("w_fc").getArr();
    INDArray mask = sd.getArrForVarName("w_fc_mask");
    assertEquals(0.0, fc.mul(mask.rsub(1.0)).norm1Number().doubleValue(), 0.0);
    Map<String, INDArray> ph = Map.of("x", data(DataType.FLOAT, 20).getFeatures());
    INDArray trained = sd.outputSingle(ph, "logits");
    Sparsify.densify(sd);
    assertEquals(0, count(sd, FusedLayerNormOp.class) + count(sd, SparseMatmulOp.class));
    assertTrue(sd.outputSingle(ph, "logits").equalsWithEps(trained, 1e-4), "densified trained");
  }

  private static SparsityConfig sparse(FuseSettings fuse) {
    return SparsityConfig.builder()
        .pattern("block8")
        .sparsity(0.5)
        .include("w_fc", "w_proj")
        .keepFirstDense(false)
        .keepLastDense(false)
        .fuse(fuse)
        .build();
  }

  @Test
  void biasFoldKeepsOutputsAndGradientsAndIsReported() {
    SameDiff plain = block(DataType.DOUBLE), folded = block(DataType.DOUBLE);
    Sparsify.apply(sparse(FuseSettings.none()), plain);
    SparsifyReport r =
        Sparsify.apply(sparse(new FuseSettings(false, false, true)), folded).report();
    Entry e =
        r.entries().stream()
            .filter(x -> x.originalType().equals("add (bias)"))
            .findFirst()
            .orElseThrow(() -> new AssertionError(r.toString()));
    assertEquals(SparseMatmulOp.OP_NAME + "+bias", e.resultType());
    assertTrue(e.reason().contains("'b_fc'") && e.reason().contains("'w_fc'"), e.reason());
    assertEquals(count(plain, AddOp.class) - 1, count(folded, AddOp.class));
    DataSet ds = data(DataType.DOUBLE, 6);
    Map<String, INDArray> ph = Map.of("x", ds.getFeatures(), "label", ds.getLabels());
    assertTrue(
        plain.outputSingle(ph, "logits").equalsWithEps(folded.outputSingle(ph, "logits"), 1e-10));
    Map<String, INDArray> gp = plain.calculateGradients(ph, "w_fc", "b_fc", "ln1_g");
    Map<String, INDArray> gf = folded.calculateGradients(ph, "w_fc", "b_fc", "ln1_g");
    for (String v : gp.keySet()) {
      assertTrue(gp.get(v).equalsWithEps(gf.get(v), 1e-10), v);
    }
    Sparsify.densify(folded); // after the gradient function exists, as for a trained model
    assertEquals(0, count(folded, SparseMatmulOp.class));
    assertTrue(
        plain.outputSingle(ph, "logits").equalsWithEps(folded.outputSingle(ph, "logits"), 1e-10));
  }

  @Test
  void fuseSectionParsesRoundTripsAndRejectsTypos() {
    SparsityConfig c = SparsityConfig.fromYaml("pattern: block16\nfuse: {layerNorm: false}\n");
    assertEquals(
        new FuseSettings(false, FuseSettings.DEFAULT_GELU, FuseSettings.DEFAULT_BIAS_ADD),
        c.getFuse());
    assertEquals(c, SparsityConfig.fromJson(c.toJson()));
    assertEquals(c, SparsityConfig.fromYaml(c.toYaml()));
    assertEquals(FuseSettings.defaults(), new SparsityConfig().fuseOrDefault());
    IllegalArgumentException typo =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsityConfig.fromYaml("fuse: {layernorm: true}\n"));
    assertTrue(typo.getMessage().contains("layernorm"), typo.getMessage());
    IllegalArgumentException scalar =
        assertThrows(IllegalArgumentException.class, () -> SparsityConfig.fromYaml("fuse: 3\n"));
    assertTrue(scalar.getMessage().contains("fuse"), scalar.getMessage());
  }
}
