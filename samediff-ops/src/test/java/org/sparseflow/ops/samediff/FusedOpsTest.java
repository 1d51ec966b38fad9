package org.sparseflow.ops.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.Sgd;

/**
 * The fused layer-norm and GELU ops: finite-difference gradients in double, equivalence with ND4J's
 * {@code layer_norm} / {@code gelu} (outputs and gradients, float and double), save/load.
 */
class FusedOpsTest {

  private static final int B = 3, T = 5, C = 8;

  /**
   * x [B, T, C] -> layer norm (fused or stock) -> matmul W [C, C] -> gelu (fused or stock) ->
   * weighted sum loss (fixed random weights, so every output element matters).
   */
  private static SameDiff graph(DataType dt, boolean fused, long seed) {
    Nd4j.getRandom().setSeed(seed);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", dt, -1, T, C);
    SDVariable g = sd.var("g", Nd4j.rand(dt, C).addi(0.5));
    SDVariable b = sd.var("b", Nd4j.randn(dt, C).muli(0.1));
    SDVariable w = sd.var("w", Nd4j.randn(dt, C, C).muli(0.5));
    SDVariable ln =
        fused
            ? FusedOps.layerNorm(sd, "ln", x, g, b, 0.0)
            : sd.nn().layerNorm("ln", x, g, b, false, 2);
    SDVariable z = ln.reshape(-1, C).mmul(w);
    SDVariable a = fused ? FusedOps.gelu(sd, "act", z) : sd.nn().gelu("act", z);
    SDVariable r = sd.constant("r", Nd4j.randn(dt, B * T, C));
    a.mul(r).sum("loss");
    return sd;
  }

  private static INDArray input(DataType dt, long seed) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.randn(dt, B, T, C).muli(2.0).addi(0.3);
  }

  @Test
  void gradientsMatchFiniteDifferencesInDouble() {
    SameDiff sd = graph(DataType.DOUBLE, true, 5);
    Map<String, INDArray> ph = new HashMap<>(Map.of("x", input(DataType.DOUBLE, 7)));
    Map<String, INDArray> analytic = sd.calculateGradients(ph, "x", "g", "b", "w");
    for (String name : new String[] {"x", "g", "b", "w"}) {
      INDArray target = name.equals("x") ? ph.get("x") : sd.getVariable(name).getArr();
      INDArray grad = analytic.get(name);
      Random pick = new Random(name.hashCode());
      for (int trial = 0; trial < 12; trial++) {
        long i = pick.nextInt((int) target.length());
        double orig = target.getDouble(i), eps = 1e-6;
        target.putScalar(i, orig + eps);
        double plus = loss(sd, ph);
        target.putScalar(i, orig - eps);
        double minus = loss(sd, ph);
        target.putScalar(i, orig);
        double numeric = (plus - minus) / (2 * eps), a = grad.getDouble(i);
        double denom = Math.max(Math.abs(numeric) + Math.abs(a), 1e-8);
        assertTrue(
            Math.abs(a - numeric) / denom < 1e-6 || Math.abs(a - numeric) < 1e-9,
            name + "[" + i + "] analytic " + a + " numeric " + numeric);
      }
    }
  }

  private static double loss(SameDiff sd, Map<String, INDArray> ph) {
    return sd.output(ph, "loss").get("loss").getDouble(0);
  }

  @ParameterizedTest
  @ValueSource(strings = {"FLOAT", "DOUBLE"})
  void outputsAndGradientsEqualStockOps(String type) {
    DataType dt = DataType.valueOf(type);
    double tol = dt == DataType.DOUBLE ? 1e-10 : 2e-5;
    SameDiff fused = graph(dt, true, 3), stock = graph(dt, false, 3);
    Map<String, INDArray> ph = Map.of("x", input(dt, 9));
    for (String out : new String[] {"ln", "act", "loss"}) {
      INDArray f = fused.outputSingle(ph, out), s = stock.outputSingle(ph, out);
      assertTrue(f.equalsWithEps(s, tol * Math.max(1, s.amaxNumber().doubleValue())), out);
    }
    Map<String, INDArray> gf = fused.calculateGradients(ph, "x", "g", "b", "w");
    Map<String, INDArray> gs = stock.calculateGradients(ph, "x", "g", "b", "w");
    for (String v : gf.keySet()) {
      double scale = Math.max(1, gs.get(v).amaxNumber().doubleValue());
      assertTrue(gf.get(v).equalsWithEps(gs.get(v), 10 * tol * scale), v);
    }
  }

  @Test
  void constantRowGivesTheBiasAndZeroInputGradientLikeStockOp() {
    SameDiff fused = graph(DataType.DOUBLE, true, 4), stock = graph(DataType.DOUBLE, false, 4);
    INDArray x = input(DataType.DOUBLE, 1);
    x.get(NDArrayIndex.point(1), NDArrayIndex.point(2), NDArrayIndex.all()).assign(0.75);
    Map<String, INDArray> ph = Map.of("x", x);
    INDArray f = fused.outputSingle(ph, "ln");
    assertTrue(f.equalsWithEps(stock.outputSingle(ph, "ln"), 1e-10));
    assertEquals(0.0, fused.calculateGradients(ph, "x").get("x").getDouble(1, 2, 3), 0.0);
  }

  @Test
  void fitThenSaveLoadKeepsOpsOutputsAndTraining(@TempDir File dir) throws Exception {
    SameDiff sd = graph(DataType.FLOAT, true, 8);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, C);
    sd.loss().meanSquaredError("mse", label, sd.getVariable("act"), null);
    sd.setLossVariables("mse");
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Sgd(0.05))
            .dataSetFeatureMapping("x")
            .dataSetLabelMapping("label")
            .build());
    DataSet ds = new DataSet(input(DataType.FLOAT, 2), Nd4j.randn(DataType.FLOAT, B * T, C));
    sd.fit(ds);
    File f = new File(dir, "fused.sd");
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    assertEquals(
        1,
        loaded.getOps().values().stream()
            .filter(o -> o.getOp() instanceof FusedLayerNormOp ln && ln.axis() == 2)
            .count());
    assertEquals(
        1, loaded.getOps().values().stream().filter(o -> o.getOp() instanceof FusedGeluOp).count());
    Map<String, INDArray> ph = Map.of("x", ds.getFeatures());
    assertEquals(sd.outputSingle(ph, "act"), loaded.outputSingle(ph, "act"));
    sd.fit(ds);
    loaded.fit(ds);
    for (String v : new String[] {"g", "b", "w"}) {
      assertEquals(sd.getVariable(v).getArr(), loaded.getVariable(v).getArr(), v);
    }
  }

  @Test
  void badInputsAreNamed() {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.var("x", Nd4j.rand(DataType.FLOAT, 2, 4));
    SDVariable g = sd.var("g", Nd4j.ones(DataType.FLOAT, 3));
    SDVariable b = sd.var("b", Nd4j.zeros(DataType.FLOAT, 3));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> FusedOps.layerNorm(sd, null, x, g, b, -1.0));
    assertTrue(e.getMessage().contains("eps = -1.0"), e.getMessage());
    SDVariable y = FusedOps.layerNorm(sd, "y", x, g, b, 0.0);
    Exception run = assertThrows(Exception.class, () -> y.eval());
    String msg = String.valueOf(run.getMessage()) + run.getCause();
    assertTrue(msg.contains("gain/bias shape = [3]"), msg);
  }
}
