package org.sparseflow.layers.samediff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.SparseAttentionOp;

/**
 * Causal attention written by others: runtime masks (placeholder, computed, boolean select) are
 * recognised and reported with the reason they stay dense; a constant causal bias with the scale
 * before or after Q·Kᵀ is replaced; head-aware masks leave no head without gradient.
 */
class AttentionStylesTest {
  static final int T = 8, H = 4, D = 8;

  static SparsityConfig attentionConfig(String weights) {
    return SparsityConfig.fromYaml(
        weights + "attention: {pattern: 'local:2', blockSize: 4, layers: ['probs']}\n");
  }

  static Map<String, INDArray> feeds(boolean mask) {
    Nd4j.getRandom().setSeed(7);
    Map<String, INDArray> f = new HashMap<>();
    f.put("x", Nd4j.randn(DataType.DOUBLE, 2, T, H * D));
    f.put("target", Nd4j.randn(DataType.DOUBLE, 2 * T, H * D));
    if (mask) {
      f.put("mask", ThirdPartyGraphs.causalKeep(T));
    }
    return f;
  }

  private static long attentionOps(SameDiff sd) {
    return sd.getOps().values().stream()
        .filter(o -> o.getOp() instanceof SparseAttentionOp)
        .count();
  }

  @Test
  void runtimeMaskFromAPlaceholderIsReportedWithItsReason() {
    SameDiff sd = ThirdPartyGraphs.attentionBlock(T, H, D, true, false);
    INDArray before = sd.outputSingle(feeds(true), "y");
    SparsifyReport r = Sparsify.apply(attentionConfig("sparsity: 0.5\n"), sd).report();
    SparsifyReport.Entry e = r.entry("probs");
    assertNotNull(e, "the attention has a report line:\n" + r);
    assertEquals(Status.DENSE, e.status(), r.toString());
    assertTrue(e.reason().contains("runtime value"), e.reason());
    assertTrue(e.reason().contains("placeholder 'mask'"), e.reason());
    assertEquals(0, attentionOps(sd));
    // the projections are still matched: Q, K and V all are the first layer by depth (op order
    // would make only Q first), the output projection is the last
    for (String w : new String[] {"q", "k", "v"}) {
      SparsifyReport.Entry p = r.entry("attn_" + w + "_weight");
      assertTrue(p.reason().contains("keepFirstDense"), r.toString());
    }
    assertTrue(r.entry("attn_out_weight").reason().contains("keepLastDense"), r.toString());
    assertEquals(before.shape().length, sd.outputSingle(feeds(true), "y").rank());
  }

  @Test
  void booleanSelectMaskIsRecognisedAndReported() {
    Nd4j.getRandom().setSeed(8);
    SameDiff sd = SameDiff.create();
    SDVariable q = sd.placeHolder("q", DataType.DOUBLE, -1, H, T, D);
    SDVariable k = sd.placeHolder("k", DataType.DOUBLE, -1, H, T, D);
    SDVariable v = sd.placeHolder("v", DataType.DOUBLE, -1, H, T, D);
    SDVariable keep = sd.placeHolder("keep", DataType.BOOL, T, T);
    SDVariable scores = sd.mmul("scores", q, k, false, true, false).div("scaled", Math.sqrt(D));
    SDVariable fill =
        sd.constant("fill", Nd4j.valueArrayOf(new long[] {T, T}, -1e9, DataType.DOUBLE));
    SDVariable masked = sd.where("masked", scores, fill, keep);
    sd.mmul("att", sd.nn.softmax("probs", masked, -1), v);
    SparsifyReport r = Sparsify.apply(attentionConfig(""), sd).report();
    SparsifyReport.Entry e = r.entry("probs");
    assertNotNull(e, "the attention has a report line:\n" + r);
    assertTrue(e.reason().contains("boolean select"), e.reason());
    assertTrue(e.reason().contains("placeholder 'keep'"), e.reason());
  }

  @Test
  void constantCausalBiasWithScaleBeforeOrAfterIsReplacedByTheSparseOp() {
    for (boolean scaleFirst : new boolean[] {false, true}) {
      SameDiff sd = ThirdPartyGraphs.attentionBlock(T, H, D, false, scaleFirst);
      // local:2 with blocks of 4 over T = 8 covers every causal pair: the replaced attention
      // must compute exactly what the original subgraph did (weights excluded from sparsity)
      SparsityConfig cfg =
          SparsityConfig.fromYaml(
              "exclude: ['.*']\n"
                  + "attention: {pattern: 'local:2', blockSize: 4, layers: ['probs']}\n");
      INDArray before = sd.outputSingle(feeds(false), "att");
      SparsifyReport r = Sparsify.apply(cfg, sd).report();
      assertEquals(Status.SPARSE_ATTENTION, r.entry("probs").status(), r.toString());
      assertTrue(r.entry("probs").reason().contains("scale=" + (1.0 / Math.sqrt(D))), r.toString());
      assertEquals(1, attentionOps(sd));
      INDArray after = sd.outputSingle(feeds(false), "att");
      assertEquals(
          0.0, after.sub(before).amaxNumber().doubleValue(), 1e-9, "scaleFirst=" + scaleFirst);
    }
  }

  @Test
  void headAwareMasksLeaveEveryHeadWithGradient() {
    boolean adjusted = false;
    for (long seed = 1; seed <= 6; seed++) {
      SameDiff sd = ThirdPartyGraphs.attentionBlock(T, H, D, false, false, seed % 2 == 0);
      SparsityConfig cfg =
          SparsityConfig.fromYaml(
              "pattern: block8\nsparsity: 0.75\nkeepFirstDense: false\nkeepLastDense: false\n"
                  + "seed: "
                  + seed
                  + "\nattention: {pattern: 'local:2', blockSize: 4, layers: ['probs']}\n");
      SparsifyReport r = Sparsify.apply(cfg, sd).report();
      adjusted |= r.toString().contains("head-aware masks: moved");
      for (String w : new String[] {"q", "k", "v", "out"}) {
        assertEquals(Status.SPARSE, r.entry("attn_" + w + "_weight").status(), r.toString());
      }
      Map<String, INDArray> g =
          sd.calculateGradients(
              feeds(false), "attn_q_weight", "attn_k_weight", "attn_v_weight", "attn_out_weight");
      for (int h = 0; h < H; h++) {
        // weights are [out, in]: head h owns rows h*D..(h+1)*D of Wq, Wk, Wv, columns of Wo
        for (String w : new String[] {"attn_q_weight", "attn_k_weight", "attn_v_weight"}) {
          INDArray slice = g.get(w).get(NDArrayIndex.interval(h * D, (h + 1) * D));
          assertTrue(
              slice.amaxNumber().doubleValue() > 0,
              "seed " + seed + ": head " + h + " of " + w + " gets no gradient\n" + r);
        }
        INDArray o =
            g.get("attn_out_weight")
                .get(NDArrayIndex.all(), NDArrayIndex.interval(h * D, (h + 1) * D));
        assertTrue(o.amaxNumber().doubleValue() > 0, "seed " + seed + ": head " + h + " of Wo");
      }
    }
    assertTrue(adjusted, "some seed needed a head-aware adjustment (the report says so)");
  }
}
