package org.sparseflow.examples.gpt;

import static org.junit.jupiter.api.Assertions.*;

import java.util.HashMap;
import java.util.Map;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.GradientNormalization;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.WeightDecay;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;

/**
 * The ComputationGraph GPT's options: decoupled weight decay, the attention block size and gradient
 * clipping.
 */
class ComputationGraphGptTest {
  static final GptConfig C = new GptConfig(20, 2, 16, 2, 32, 1);

  static Layer layer(ComputationGraphConfiguration conf, String name) {
    return ((LayerVertex) conf.getVertices().get(name)).getLayerConf().getLayer();
  }

  @Test
  void weightDecayAndAttentionBlockSizeReachTheLayersAndSurviveJson() {
    ComputationGraphConfiguration conf =
        ComputationGraphGpt.configuration(C, new Adam(1e-3), 0.01, 16);
    CausalSelfAttentionLayer attn = (CausalSelfAttentionLayer) layer(conf, "h0_attn");
    assertEquals(16, attn.getBlockSize());
    BaseLayer fc = (BaseLayer) ((TimeDistributed) layer(conf, "h1_fc")).getUnderlying();
    WeightDecay wd = (WeightDecay) fc.getRegularization().get(0);
    assertEquals(0.01, wd.getCoeff().valueAt(0, 0), 1e-12);
    assertTrue(wd.isApplyLR(), "decoupled decay scaled by the learning rate, as AdamW");
    assertTrue(
        fc.getRegularizationBias() == null || fc.getRegularizationBias().isEmpty(),
        "biases are not decayed");

    ComputationGraphConfiguration back = ComputationGraphConfiguration.fromJson(conf.toJson());
    assertEquals(conf, back);
    assertEquals(16, ((CausalSelfAttentionLayer) layer(back, "h1_attn")).getBlockSize());
  }

  @Test
  void defaultsKeepOneDenseTileAndNoDecay() {
    ComputationGraphConfiguration conf = ComputationGraphGpt.configuration(C, new Adam(1e-3));
    assertEquals(C.context(), ((CausalSelfAttentionLayer) layer(conf, "h0_attn")).getBlockSize());
    BaseLayer fc = (BaseLayer) ((TimeDistributed) layer(conf, "h0_fc")).getUnderlying();
    assertTrue(fc.getRegularization() == null || fc.getRegularization().isEmpty());
  }

  @Test
  void gradientClippingReachesEveryLayerIncludingWrappedOnesAndSurvivesJson() {
    ComputationGraphConfiguration conf =
        ComputationGraphGpt.clipGradients(
            ComputationGraphGpt.configuration(C, new Adam(1e-3), 0.01, 16), 0.5);
    int clipped = 0;
    for (var v : conf.getVertices().values()) {
      if (v instanceof LayerVertex lv) {
        Layer l = lv.getLayerConf().getLayer();
        if (l instanceof TimeDistributed td) {
          l = td.getUnderlying();
        }
        BaseLayer b = (BaseLayer) l;
        assertEquals(
            GradientNormalization.ClipL2PerParamType,
            b.getGradientNormalization(),
            lv.getLayerConf().getLayer().getLayerName());
        assertEquals(0.5, b.getGradientNormalizationThreshold(), 0.0);
        clipped++;
      }
    }
    assertEquals(2 + 2 * 5 + 2, clipped, "wte, wpe, 5 layers per block, ln_f, lm_head");
    ComputationGraphConfiguration back = ComputationGraphConfiguration.fromJson(conf.toJson());
    assertEquals(conf, back);
    BaseLayer fc = (BaseLayer) ((TimeDistributed) layer(back, "h1_fc")).getUnderlying();
    assertEquals(GradientNormalization.ClipL2PerParamType, fc.getGradientNormalization());
  }

  /**
   * With SGD(lr = 1) one step moves each parameter type by its clipped gradient: L2 norm of the
   * step <= threshold.
   */
  @Test
  void clippedStepIsBoundedByTheThreshold() {
    double threshold = 1e-3;
    ComputationGraph net =
        new ComputationGraph(
            ComputationGraphGpt.clipGradients(
                ComputationGraphGpt.configuration(C, new Sgd(1.0)), threshold));
    net.init();
    ComputationGraph free =
        new ComputationGraph(ComputationGraphGpt.configuration(C, new Sgd(1.0)));
    free.init();
    free.setParams(net.params().dup());
    int[][] windows = new int[2][C.context() + 1];
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j <= C.context(); j++) {
        windows[i][j] = (i * 7 + j * 3) % C.vocab();
      }
    }
    var batch = ComputationGraphGpt.batch(windows, C.vocab());
    var before = net.paramTable(true);
    Map<String, INDArray> start = new HashMap<>();
    before.forEach((k, v) -> start.put(k, v.dup()));
    net.fit(batch);
    free.fit(batch);
    double maxFreeStep = 0;
    for (String k : start.keySet()) {
      double step = net.getParam(k).sub(start.get(k)).norm2Number().doubleValue();
      assertTrue(step <= threshold * (1 + 1e-4), k + " moved " + step + " > " + threshold);
      maxFreeStep =
          Math.max(maxFreeStep, free.getParam(k).sub(start.get(k)).norm2Number().doubleValue());
    }
    assertTrue(
        maxFreeStep > 10 * threshold,
        "unclipped steps are larger, so the clip was active: " + maxFreeStep);
  }

  @Test
  void rejectsBadOptionsNamingTheArgument() {
    IllegalArgumentException c =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ComputationGraphGpt.clipGradients(
                    ComputationGraphGpt.configuration(C, new Adam(1e-3)), 0.0));
    assertTrue(c.getMessage().contains("threshold = 0.0"), c.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ComputationGraphGpt.clipGradients(
                ComputationGraphGpt.configuration(C, new Adam(1e-3)), Double.NaN));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), 0.0, 12));
    assertTrue(
        e.getMessage().contains("attentionBlockSize = 12") && e.getMessage().contains("32"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), -0.1, 16));
    assertTrue(e.getMessage().contains("weightDecay = -0.1"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), Double.NaN, 16));
    assertTrue(e.getMessage().contains("weightDecay = NaN"), e.getMessage());
  }
}
