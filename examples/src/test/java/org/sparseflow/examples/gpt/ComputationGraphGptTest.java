package org.sparseflow.examples.gpt;

import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.regularization.WeightDecay;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;

import static org.junit.jupiter.api.Assertions.*;

/** The ComputationGraph GPT's options: decoupled weight decay and the attention block size. */
class ComputationGraphGptTest {
    static final GptConfig C = new GptConfig(20, 2, 16, 2, 32, 1);

    static org.deeplearning4j.nn.conf.layers.Layer layer(ComputationGraphConfiguration conf, String name) {
        return ((LayerVertex) conf.getVertices().get(name)).getLayerConf().getLayer();
    }

    @Test
    void weightDecayAndAttentionBlockSizeReachTheLayersAndSurviveJson() {
        ComputationGraphConfiguration conf = ComputationGraphGpt.configuration(C, new Adam(1e-3), 0.01, 16);
        CausalSelfAttentionLayer attn = (CausalSelfAttentionLayer) layer(conf, "h0_attn");
        assertEquals(16, attn.getBlockSize());
        BaseLayer fc = (BaseLayer) ((TimeDistributed) layer(conf, "h1_fc")).getUnderlying();
        WeightDecay wd = (WeightDecay) fc.getRegularization().get(0);
        assertEquals(0.01, wd.getCoeff().valueAt(0, 0), 1e-12);
        assertTrue(wd.isApplyLR(), "decoupled decay scaled by the learning rate, as AdamW");
        assertTrue(fc.getRegularizationBias() == null || fc.getRegularizationBias().isEmpty(), "biases are not decayed");

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
    void rejectsBadOptionsNamingTheArgument() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), 0.0, 12));
        assertTrue(e.getMessage().contains("attentionBlockSize = 12") && e.getMessage().contains("32"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), -0.1, 16));
        assertTrue(e.getMessage().contains("weightDecay = -0.1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> ComputationGraphGpt.configuration(C, new Adam(1e-3), Double.NaN, 16));
        assertTrue(e.getMessage().contains("weightDecay = NaN"), e.getMessage());
    }
}
