package org.sparseflow.ops.samediff;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
import org.nd4j.imports.converters.ImportClassMapping;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * {@link PackedMatmulOp} in SameDiff: the weight variable is only the kept blocks; gradients,
 * equivalence with the masked op, fit and save/load.
 */
class PackedMatmulOpTest {

  private static PackedLayout layout(int rows, int cols, int b, double density, long seed) {
    return PackedLayout.of((BlockMask) PatternSpec.block(b).random(rows, cols, density, seed));
  }

  /**
   * x -> packed matmul (+ bias) -> tanh -> mse; w0 is the dense start weight (kept blocks used).
   */
  private static SameDiff graph(DataType dt, PackedLayout l, INDArray w0, INDArray b0) {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", dt, -1, l.rows());
    SDVariable label = sd.placeHolder("label", dt, -1, l.cols());
    SDVariable packed = sd.var("w_packed", PackedBlockLinear.pack(w0, l));
    SDVariable b = b0 == null ? null : sd.var("b", b0.dup());
    SDVariable y = SparseFlowOps.packedMatmul(sd, "y", x, packed, l, b);
    sd.loss().meanSquaredError("loss", label, sd.math().tanh(y), null);
    return sd;
  }

  /** The same model on the masked op, for reference. */
  private static SameDiff masked(DataType dt, PackedLayout l, INDArray w0, INDArray b0) {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", dt, -1, l.rows());
    SDVariable label = sd.placeHolder("label", dt, -1, l.cols());
    BlockMask m = l.toMask();
    SDVariable w = sd.var("w", w0.mul(m.toDense(dt)));
    SDVariable b = b0 == null ? null : sd.var("b", b0.dup());
    SDVariable y = SparseFlowOps.sparseMatmul(sd, "y", x, w, m, b, false);
    sd.loss().meanSquaredError("loss", label, sd.math().tanh(y), null);
    return sd;
  }

  @Test
  void opsAreRegisteredByName() {
    SparseFlowOps.registerAll();
    assertTrue(ImportClassMapping.getOpNameMapping().containsKey(PackedMatmulOp.OP_NAME));
    assertTrue(ImportClassMapping.getOpNameMapping().containsKey(PackedMatmulBpOp.OP_NAME));
  }

  @Test
  void gradientsMatchFiniteDifferencesInDouble() {
    Nd4j.getRandom().setSeed(5);
    PackedLayout l = layout(16, 24, 8, 0.5, 11);
    SameDiff sd =
        graph(
            DataType.DOUBLE,
            l,
            Nd4j.randn(DataType.DOUBLE, 16, 24).muli(0.3),
            Nd4j.randn(DataType.DOUBLE, 24).muli(0.1));
    Map<String, INDArray> ph = new HashMap<>();
    ph.put("x", Nd4j.randn(DataType.DOUBLE, 3, 16));
    ph.put("label", Nd4j.randn(DataType.DOUBLE, 3, 24));
    Map<String, INDArray> analytic = sd.calculateGradients(ph, "w_packed", "b", "x");
    for (String name : new String[] {"w_packed", "b", "x"}) {
      INDArray target = name.equals("x") ? ph.get("x") : sd.getVariable(name).getArr();
      INDArray g = analytic.get(name);
      assertArrayEquals(target.shape(), g.shape(), name);
      Random pick = new Random(name.hashCode());
      for (int trial = 0; trial < 12; trial++) {
        long i = pick.nextInt((int) target.length());
        double orig = target.getDouble(i);
        double eps = 1e-6;
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

  @ParameterizedTest
  @ValueSource(ints = {16, 32})
  void equalsTheMaskedOpInFloat(int b) {
    Nd4j.getRandom().setSeed(3);
    PackedLayout l = layout(64, 96, b, 0.3, 7);
    INDArray w0 = Nd4j.randn(DataType.FLOAT, 64, 96).muli(0.2);
    INDArray b0 = Nd4j.randn(DataType.FLOAT, 96).muli(0.1);
    SameDiff p = graph(DataType.FLOAT, l, w0, b0);
    SameDiff m = masked(DataType.FLOAT, l, w0, b0);
    Map<String, INDArray> ph =
        Map.of(
            "x", Nd4j.randn(DataType.FLOAT, 37, 64), "label", Nd4j.randn(DataType.FLOAT, 37, 96));
    INDArray yp = p.output(ph, "y").get("y");
    INDArray ym = m.output(ph, "y").get("y");
    assertTrue(yp.equalsWithEps(ym, 1e-4), "forward");
    Map<String, INDArray> gp = p.calculateGradients(ph, "w_packed", "b", "x");
    Map<String, INDArray> gm = m.calculateGradients(ph, "w", "b", "x");
    assertTrue(gp.get("x").equalsWithEps(gm.get("x"), 1e-4), "dx");
    assertTrue(gp.get("b").equalsWithEps(gm.get("b"), 1e-4), "db");
    INDArray dwPacked = PackedBlockLinear.pack(gm.get("w"), l);
    assertTrue(gp.get("w_packed").equalsWithEps(dwPacked, 1e-4), "dW on kept blocks");
  }

  @Test
  void rankThreeInputsFlattenTheirLeadingAxes() {
    Nd4j.getRandom().setSeed(9);
    PackedLayout l = layout(32, 32, 16, 0.5, 1);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, 5, 32);
    SDVariable w = sd.var("w_packed", Nd4j.randn(DataType.FLOAT, l.packedShape()));
    SparseFlowOps.packedMatmul(sd, "y", x, w, l, null);
    INDArray in = Nd4j.randn(DataType.FLOAT, 2, 5, 32);
    INDArray y = sd.output(Map.of("x", in), "y").get("y");
    assertArrayEquals(new long[] {2, 5, 32}, y.shape());
    INDArray ref = in.reshape(10, 32).mmul(PackedBlockLinear.unpack(w.getArr(), l));
    assertTrue(y.reshape(10, 32).equalsWithEps(ref, 1e-4));
  }

  @Test
  void fitTrainsThePackedValuesAndSurvivesSaveLoad(@TempDir File dir) throws Exception {
    Nd4j.getRandom().setSeed(2);
    PackedLayout l = layout(32, 64, 16, 0.25, 7);
    SameDiff sd =
        graph(
            DataType.FLOAT,
            l,
            Nd4j.randn(DataType.FLOAT, 32, 64).muli(0.3),
            Nd4j.zeros(DataType.FLOAT, 64));
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("x")
            .dataSetLabelMapping("label")
            .build());
    INDArray x = Nd4j.randn(DataType.FLOAT, 16, 32);
    INDArray label = Nd4j.randn(DataType.FLOAT, 16, 64).muli(0.5);
    DataSet ds = new DataSet(x, label);
    double before = loss(sd, Map.of("x", x, "label", label));
    INDArray start = sd.getVariable("w_packed").getArr().dup();
    for (int i = 0; i < 20; i++) {
      sd.fit(ds);
    }
    double after = loss(sd, Map.of("x", x, "label", label));
    assertTrue(after < before, "loss " + before + " -> " + after);
    assertArrayEquals(l.packedShape(), sd.getVariable("w_packed").getArr().shape());
    assertTrue(!sd.getVariable("w_packed").getArr().equals(start), "the packed values trained");
    File f = new File(dir, "packed.sd");
    sd.save(f, true);
    SameDiff loaded = SameDiff.load(f, true);
    INDArray y0 = sd.output(Map.of("x", x), "y").get("y");
    INDArray y1 = loaded.output(Map.of("x", x), "y").get("y");
    assertEquals(y0, y1);
  }

  @Test
  void wrongPackedLengthIsAClearError() {
    PackedLayout l = layout(32, 32, 16, 0.5, 1);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, 32);
    SDVariable w = sd.var("w_packed", Nd4j.randn(DataType.FLOAT, 16, 16));
    SparseFlowOps.packedMatmul(sd, "y", x, w, l, null);
    Exception e =
        assertThrows(
            RuntimeException.class,
            () -> sd.output(Map.of("x", Nd4j.randn(DataType.FLOAT, 2, 32)), "y"));
    String msg = e.getMessage() + (e.getCause() == null ? "" : " " + e.getCause().getMessage());
    assertTrue(msg.contains("packed has shape [16, 16]"), msg);
  }

  /**
   * Spare capacity (MST holds a phase's largest block count): the values after the kept blocks
   * change nothing, get a zero gradient; growth scores are the dense gradient's block norms; a new
   * layout set on the ops is what runs (and what a saved graph keeps).
   */
  @Test
  void spareCapacityGrowthScoresAndNewLayouts() {
    Nd4j.getRandom().setSeed(8);
    PackedLayout l = layout(16, 24, 8, 0.5, 3);
    INDArray w0 = Nd4j.randn(DataType.DOUBLE, 16, 24);
    SameDiff exact = graph(DataType.DOUBLE, l, w0, null);
    SameDiff spare = graph(DataType.DOUBLE, l, w0, null);
    INDArray big = Nd4j.randn(DataType.DOUBLE, (l.keptBlocks() + 2) * 8L, 8); // junk in spare
    PackedBlockLinear.leadingBlocks(big, l.keptBlocks(), 8).assign(PackedBlockLinear.pack(w0, l));
    spare.getVariable("w_packed").setArray(big);
    Map<String, INDArray> ph = new HashMap<>();
    ph.put("x", Nd4j.randn(DataType.DOUBLE, 5, 16));
    ph.put("label", Nd4j.randn(DataType.DOUBLE, 5, 24));
    assertEquals(exact.output(ph, "y").get("y"), spare.output(ph, "y").get("y"));
    INDArray g = spare.calculateGradients(ph, "w_packed").get("w_packed");
    INDArray ge = exact.calculateGradients(ph, "w_packed").get("w_packed");
    assertArrayEquals(big.shape(), g.shape());
    assertEquals(ge, PackedBlockLinear.leadingBlocks(g, l.keptBlocks(), 8));
    for (int s = l.keptBlocks(); s < l.keptBlocks() + 2; s++) {
      assertEquals(0.0, PackedBlockLinear.block(g, s, 8).norm1Number().doubleValue(), 0.0);
    }
    // growth scores from the backward op of the gradient function
    double[] squares = new double[l.blockRows() * l.blockCols()];
    for (var op : spare.getFunction("grad").getOps().values()) {
      if (op.getOp() instanceof PackedMatmulBpOp bp) {
        bp.setGrowthScores(squares);
      }
    }
    spare.calculateGradients(ph, "w_packed");
    assertTrue(squares[0] > 0 && squares[squares.length - 1] > 0, "every block scored");
    // a new layout: the ops compute with it
    PackedLayout next = layout(16, 24, 8, 0.5, 4);
    for (SameDiff sd : new SameDiff[] {spare, spare.getFunction("grad")}) {
      for (var op : sd.getOps().values()) {
        if (op.getOp() instanceof PackedMatmulOp m) {
          m.setLayout(next);
        } else if (op.getOp() instanceof PackedMatmulBpOp bp) {
          bp.setLayout(next);
          bp.setGrowthScores(null);
        }
      }
    }
    spare.getVariable("w_packed").setArray(PackedBlockLinear.pack(w0, next));
    SameDiff ref = graph(DataType.DOUBLE, next, w0, null);
    assertEquals(ref.output(ph, "y").get("y"), spare.output(ph, "y").get("y"));
    for (var op : spare.getFunction("grad").getOps().values()) {
      if (op.getOp() instanceof PackedMatmulBpOp bp) {
        Exception e =
            assertThrows(IllegalArgumentException.class, () -> bp.setGrowthScores(new double[1]));
        assertTrue(e.getMessage().contains("allowed: 6"), e.getMessage());
      }
    }
  }
}
