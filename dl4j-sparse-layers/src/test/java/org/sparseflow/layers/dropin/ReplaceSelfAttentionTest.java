package org.sparseflow.layers.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.MergeVertex;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.LSTM;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.conf.layers.SelfAttentionLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.LastTimeStep;
import org.deeplearning4j.nn.conf.layers.recurrent.SimpleRnn;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.weights.WeightInit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.sparsify.Sparsified;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;

/**
 * Issue 19: a ComputationGraph with DL4J's SelfAttentionLayer under {@code replaceSelfAttention:
 * true} gets a CausalSelfAttentionLayer with finite (zero) biases that trains and passes a
 * double-precision gradient check; without the flag, the attention section is reported as not
 * applied; recurrent and convolution layers are reported as unsupported.
 */
class ReplaceSelfAttentionTest {

  private static final String YAML =
      "pattern: unstructured\n"
          + "sparsity: 0.5\n"
          + "exclude: ['attn.*']\n"
          + "attention: {pattern: 'local:4', blockSize: 4, layers: ['attn'], replaceSelfAttention:"
          + " %s}\n";

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  private static ComputationGraph attentionGraph(IUpdater updater) {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(3)
            .dataType(DataType.DOUBLE)
            .updater(updater)
            .graphBuilder()
            .addInputs("in")
            .setInputTypes(InputType.recurrent(8, 8))
            .addLayer(
                "attn",
                new SelfAttentionLayer.Builder()
                    .nIn(8)
                    .nOut(8)
                    .nHeads(2)
                    .headSize(4)
                    .projectInput(true)
                    .build(),
                "in")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .nOut(3)
                    .activation(Activation.IDENTITY)
                    .build(),
                "attn")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    return g;
  }

  private static INDArray rand(long seed, long... shape) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.rand(DataType.DOUBLE, shape).subi(0.5);
  }

  @Test
  void replacedLayerHasFiniteZeroBiasesTrainsAndPassesAGradientCheck() {
    SparsityConfig cfg = SparsityConfig.fromYaml(String.format(YAML, "true"));
    Sparsified<ComputationGraph> s = Sparsify.apply(cfg, attentionGraph(new Sgd(0.05)));
    ComputationGraph g = s.model();
    assertInstanceOf(CausalSelfAttentionLayer.class, g.getLayer("attn").conf().getLayer());
    for (String b : new String[] {"bq", "bk", "bv", "bo"}) {
      INDArray p = g.getParam("attn_" + b);
      assertFalse(p.isNaN().any() || p.isInfinite().any(), b + " = " + p);
      assertEquals(0.0, p.norm1Number().doubleValue(), 0.0, b + " starts at DL4J's default bias 0");
    }
    INDArray x = rand(1, 4, 8, 8);
    INDArray y = rand(2, 4, 3, 8);
    double before = g.score(new DataSet(x, y));
    for (int i = 0; i < 5; i++) {
      g.fit(new INDArray[] {x}, new INDArray[] {y});
    }
    double after = g.score();
    assertTrue(Double.isFinite(after) && after < before, "loss " + before + " -> " + after);
    assertEquals(
        SparsifyReport.Status.SPARSE_ATTENTION,
        s.report().entry("attn").status(),
        s.report().toString());

    ComputationGraph check = Sparsify.apply(cfg, attentionGraph(new NoOp())).model();
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.GraphConfig()
                .net(check)
                .inputs(new INDArray[] {rand(3, 2, 8, 8)})
                .labels(new INDArray[] {rand(4, 2, 3, 8)})),
        "gradient check of the replaced attention layer");
  }

  @Test
  void withoutReplaceTheAttentionSectionIsReportedAsNotApplied() {
    SparsityConfig cfg = SparsityConfig.fromYaml(String.format(YAML, "false"));
    SparsifyReport r = Sparsify.apply(cfg, attentionGraph(new Sgd(0.05))).report();
    SparsifyReport.Entry e = r.entry("attn");
    assertEquals(SparsifyReport.Status.DENSE, e.status(), r.toString());
    assertTrue(
        e.reason().contains("attention section not applied")
            && e.reason().contains("replaceSelfAttention: true"),
        r.toString());
  }

  @Test
  void recurrentAndConvolutionLayersAreReportedUnsupportedOneByOne() {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .weightInit(WeightInit.XAVIER)
            .graphBuilder()
            .addInputs("seq", "img")
            .setInputTypes(InputType.recurrent(6, 5), InputType.convolutional(8, 8, 1))
            .addLayer("lstm", new LSTM.Builder().nOut(8).build(), "seq")
            .addLayer("rnn", new LastTimeStep(new SimpleRnn.Builder().nOut(8).build()), "lstm")
            .addLayer("conv", new ConvolutionLayer.Builder(3, 3).nOut(4).build(), "img")
            .addLayer("fc", new DenseLayer.Builder().nOut(16).build(), "conv")
            .addVertex("merge", new MergeVertex(), "rnn", "fc")
            .addLayer(
                "out",
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nOut(3)
                    .activation(Activation.SOFTMAX)
                    .build(),
                "merge")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    SparsityConfig cfg =
        SparsityConfig.fromYaml("pattern: unstructured\nsparsity: 0.5\nkeepFirstDense: false\n");
    SparsifyReport r = Sparsify.apply(cfg, g).report();
    for (String name : new String[] {"lstm", "rnn", "conv"}) {
      SparsifyReport.Entry e = r.entry(name);
      assertEquals(SparsifyReport.Status.UNSUPPORTED, e.status(), r.toString());
      assertTrue(e.reason().startsWith("unsupported: "), r.toString());
    }
    assertTrue(r.entry("lstm").reason().contains("recurrent (LSTM)"), r.toString());
    assertTrue(r.entry("conv").reason().contains("convolution (ConvolutionLayer)"), r.toString());
    assertEquals(SparsifyReport.Status.SPARSE, r.entry("fc").status(), r.toString());
  }
}
