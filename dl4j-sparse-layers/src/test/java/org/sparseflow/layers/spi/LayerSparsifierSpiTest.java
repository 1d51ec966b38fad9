package org.sparseflow.layers.spi;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.SelfAttentionLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;

class LayerSparsifierSpiTest {

  @Test
  void builtInsAndTestClasspathSparsifierAreDiscovered() {
    List<String> names =
        LayerSparsifiers.all().stream().map(s -> s.getClass().getSimpleName()).toList();
    assertTrue(
        names.containsAll(
            List.of(
                "DenseLayerSparsifier",
                "OutputLayerSparsifier",
                "SelfAttentionSparsifier",
                "PluginLayerSparsifier",
                "ThirdPartySparsifier")),
        names.toString());
  }

  @Test
  void thirdPartySparsifierIsUsedWithoutPluginChanges() {
    ScaledDenseLayer custom = new ScaledDenseLayer();
    custom.setNIn(16);
    custom.setNOut(16);
    custom.setActivationFn(Activation.TANH.getActivationFunction());
    MultiLayerConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .updater(new Adam(1e-3))
            .list()
            .layer(new DenseLayer.Builder().nIn(8).nOut(16).activation(Activation.RELU).build())
            .layer(custom)
            .layer(
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(16)
                    .nOut(4)
                    .activation(Activation.SOFTMAX)
                    .build())
            .build();
    int before = ThirdPartySparsifier.calls;
    var res = Sparsify.apply(SparsityConfig.builder().sparsity(0.5).build(), conf);
    assertEquals(before + 1, ThirdPartySparsifier.calls);
    assertInstanceOf(SparseDenseLayer.class, res.model().getConf(1).getLayer());
    SparsifyReport.Entry e = res.report().entry("layer1");
    assertEquals(SparsifyReport.Status.SPARSE, e.status());
    assertTrue(e.reason().contains("third-party"), e.reason());
    // the activation of the third-party layer carried over
    assertEquals(
        Activation.TANH.getActivationFunction(),
        ((SparseDenseLayer) res.model().getConf(1).getLayer()).getActivationFn());
  }

  @Test
  void timeDistributedDenseIsSparsifiedInsideItsWrapperAndDensifiedBack() {
    var td =
        new TimeDistributed(
            new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.GELU).build(),
            RNNFormat.NCW);
    SparsityConfig cfg = SparsityConfig.builder().pattern("block8").sparsity(0.5).build();
    TimeDistributedSparsifier s = new TimeDistributedSparsifier();
    assertTrue(s.supports(td, cfg));
    assertArrayEquals(new long[] {16, 32}, s.weightShapes(td).get("W"));
    var sparse =
        (TimeDistributed) s.sparsify(td, new LayerSparsity(true, "block8", 0.5, null, 16), cfg);
    SparseDenseLayer inner = (SparseDenseLayer) sparse.getUnderlying();
    assertEquals("block8", inner.getPattern());
    assertEquals(Activation.GELU.getActivationFunction(), inner.getActivationFn());
    var back = (TimeDistributed) s.densify(sparse);
    assertEquals(DenseLayer.class, back.getUnderlying().getClass());
  }

  @Test
  void selfAttentionIsReplacedOnlyWhenConfigAsks() {
    SelfAttentionLayer sa =
        new SelfAttentionLayer.Builder()
            .nIn(16)
            .nOut(16)
            .nHeads(2)
            .headSize(8)
            .projectInput(true)
            .build();
    SelfAttentionSparsifier s = new SelfAttentionSparsifier();
    assertFalse(s.supports(sa, SparsityConfig.builder().build()));
    SparsityConfig yes = SparsityConfig.builder().attention("local:8", 8, true).build();
    assertTrue(s.supports(sa, yes));
    var c =
        (CausalSelfAttentionLayer)
            s.sparsify(sa, new LayerSparsity(false, null, 1.0, "local:8", 8), yes);
    assertEquals(2, c.getNHeads());
    assertEquals("local:8", c.getAttentionPattern());
    assertNull(c.getProjectionPattern());
  }
}
