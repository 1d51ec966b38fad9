package org.sparseflow.examples.gpt;

import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.GradientNormalization;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.distribution.NormalDistribution;
import org.deeplearning4j.nn.conf.graph.ElementWiseVertex;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.EmbeddingSequenceLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.deeplearning4j.nn.conf.layers.wrapper.BaseWrapperLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.LayerNormLayer;

/**
 * Reference GPT as a DL4J {@link ComputationGraph}: stock DL4J layers plus the plugin's {@link
 * CausalSelfAttentionLayer} in dense mode (DL4J M2.1 has no causal attention) and its {@link
 * LayerNormLayer} (M2.1 only has layer norm fused into DenseLayer).
 *
 * <p>Inputs: {@value #TOKENS} [B, T] token ids and {@value #POSITIONS} [B, T] position ids 0..T-1
 * (both float; the position embedding is a second EmbeddingSequenceLayer because DL4J has no
 * learned-bias layer over time). Activations are recurrent, NWC [B, T, C] by default ({@link
 * #DEFAULT_FORMAT}; NCW [B, C, T] on request). NWC is the transformer's natural layout:
 * projections, layer norms and the TimeDistributed MLP read and write rows [B*T, C] without
 * transposes (with NCW, layout copies were ~10-15% of a gpt-mini training step). Blocks are pre-LN:
 * {@code x += attn(ln1(x)); x += proj(gelu(fc(ln2(x))))}; the MLP dense layers are wrapped in
 * {@link TimeDistributed} (applied at every step; a PreprocessorVertex FF->RNN would take the
 * minibatch size from the last labels, which breaks inference at another batch size). Output: an
 * {@link RnnOutputLayer} (softmax, MCXENT) with one-hot labels [B, T, V] (NWC) or [B, V, T] (NCW).
 * Vertex names: {@code wte, wpe, emb, h<i>_ln1, h<i>_attn, h<i>_res1, h<i>_ln2, h<i>_fc, h<i>_proj,
 * h<i>_res2, ln_f, lm_head}. The head is always untied (stock DL4J layers cannot share weights).
 */
public final class ComputationGraphGpt {
  public static final String TOKENS = "tokens";
  public static final String POSITIONS = "positions";
  public static final String OUTPUT = "lm_head";

  /**
   * Activation layout of {@link #configuration(GptConfig, IUpdater, double, int)} and {@link
   * #batch(int[][], int)}.
   */
  public static final RNNFormat DEFAULT_FORMAT = RNNFormat.NWC;

  private ComputationGraphGpt() {}

  public static ComputationGraphConfiguration configuration(GptConfig c, double learningRate) {
    return configuration(c, new Adam(learningRate));
  }

  public static ComputationGraphConfiguration configuration(GptConfig c, IUpdater updater) {
    return configuration(c, updater, 0.0, c.context());
  }

  /**
   * As {@link #configuration(GptConfig, IUpdater)}, with decoupled weight decay on the weights
   * (DL4J's {@code WeightDecay}, applied after the updater as in AdamW; 0 = none) and the block
   * size of the attention layers' block layout ({@code context} = one dense tile per head; a
   * smaller block lets a sparse attention pattern set later, e.g. by MST's hybrid attention
   * schedule, skip work).
   */
  public static ComputationGraphConfiguration configuration(
      GptConfig c, IUpdater updater, double weightDecay, int attentionBlockSize) {
    return configuration(c, updater, weightDecay, attentionBlockSize, DEFAULT_FORMAT);
  }

  /**
   * As {@link #configuration(GptConfig, IUpdater, double, int)} with the activation layout {@code
   * format}.
   */
  public static ComputationGraphConfiguration configuration(
      GptConfig c, IUpdater updater, double weightDecay, int attentionBlockSize, RNNFormat format) {
    if (format == null) {
      throw new IllegalArgumentException("format = null is not allowed; allowed: NWC, NCW");
    }
    if (!(weightDecay >= 0.0)) {
      throw new IllegalArgumentException(
          "weightDecay = " + weightDecay + " is not allowed; allowed: >= 0");
    }
    if (attentionBlockSize < 1 || c.context() % attentionBlockSize != 0) {
      throw new IllegalArgumentException(
          "attentionBlockSize = "
              + attentionBlockSize
              + " is not allowed; allowed: "
              + "a divisor of the context length "
              + c.context());
    }
    if (c.tiedHead()) {
      throw new IllegalArgumentException(
          "tiedHead = true is not allowed for ComputationGraphGpt; allowed: false (stock DL4J"
              + " layers cannot share the embedding matrix; use SameDiffGpt for a tied head)");
    }
    int v = c.vocab(), t = c.context(), C = c.dModel();
    double projStd = 0.02 / Math.sqrt(2.0 * c.layers());
    NeuralNetConfiguration.Builder nn =
        new NeuralNetConfiguration.Builder()
            .seed(c.seed())
            .updater(updater)
            .weightInit(new NormalDistribution(0, 0.02))
            .dataType(DataType.FLOAT);
    if (weightDecay > 0) {
      nn.weightDecay(weightDecay, true);
    }
    ComputationGraphConfiguration.GraphBuilder g =
        nn.graphBuilder()
            .addInputs(TOKENS, POSITIONS)
            .addLayer(
                "wte",
                new EmbeddingSequenceLayer.Builder()
                    .nIn(v)
                    .nOut(C)
                    .inputLength(t)
                    .hasBias(false)
                    .outputDataFormat(format)
                    .build(),
                TOKENS)
            .addLayer(
                "wpe",
                new EmbeddingSequenceLayer.Builder()
                    .nIn(t)
                    .nOut(C)
                    .inputLength(t)
                    .hasBias(false)
                    .outputDataFormat(format)
                    .build(),
                POSITIONS)
            .addVertex("emb", new ElementWiseVertex(ElementWiseVertex.Op.Add), "wte", "wpe");
    String x = "emb";
    for (int l = 0; l < c.layers(); l++) {
      String p = "h" + l + "_";
      g.addLayer(
              p + "ln1", new LayerNormLayer.Builder().nIn(C).nOut(C).dataFormat(format).build(), x)
          .addLayer(
              p + "attn",
              new CausalSelfAttentionLayer.Builder()
                  .nIn(C)
                  .nOut(C)
                  .nHeads(c.heads())
                  .attentionPattern("dense")
                  .blockSize(attentionBlockSize)
                  .dataFormat(format)
                  .build(),
              p + "ln1")
          .addVertex(p + "res1", new ElementWiseVertex(ElementWiseVertex.Op.Add), x, p + "attn")
          .addLayer(
              p + "ln2",
              new LayerNormLayer.Builder().nIn(C).nOut(C).dataFormat(format).build(),
              p + "res1")
          .addLayer(
              p + "fc",
              new TimeDistributed(
                  new DenseLayer.Builder().nIn(C).nOut(4L * C).activation(Activation.GELU).build(),
                  format),
              p + "ln2")
          .addLayer(
              p + "proj",
              new TimeDistributed(
                  new DenseLayer.Builder()
                      .nIn(4L * C)
                      .nOut(C)
                      .activation(Activation.IDENTITY)
                      .weightInit(new NormalDistribution(0, projStd))
                      .build(),
                  format),
              p + "fc")
          .addVertex(
              p + "res2", new ElementWiseVertex(ElementWiseVertex.Op.Add), p + "res1", p + "proj");
      x = p + "res2";
    }
    g.addLayer("ln_f", new LayerNormLayer.Builder().nIn(C).nOut(C).dataFormat(format).build(), x)
        .addLayer(
            OUTPUT,
            new RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                .nIn(C)
                .nOut(v)
                .activation(Activation.SOFTMAX)
                .dataFormat(format)
                .build(),
            "ln_f")
        .setOutputs(OUTPUT);
    return g.build();
  }

  /**
   * Turns on per-parameter L2 gradient clipping ({@link GradientNormalization#ClipL2PerParamType})
   * with {@code threshold} on every layer of {@code conf}, including the dense layers inside {@link
   * TimeDistributed}; returns {@code conf}. Call before the graph is built.
   *
   * <p>Why: without it this graph stalls at the unigram loss at Adam learning rates of 1.5e-3 and
   * above (the attention layers' early gradient spikes, a training-dynamics effect: float and
   * double gradients agree and the double gradient check passes); clipping only the attention
   * layers' gradients already lets it train at 2e-3. DL4J's score, and so its gradient, is the loss
   * summed over the T positions and averaged over the batch, so the threshold is on that scale (T
   * times a per-token mean loss's).
   */
  public static ComputationGraphConfiguration clipGradients(
      ComputationGraphConfiguration conf, double threshold) {
    if (conf == null) {
      throw new IllegalArgumentException(
          "conf = null is not allowed; allowed: a ComputationGraphConfiguration");
    }
    if (!(threshold > 0.0) || Double.isInfinite(threshold)) {
      throw new IllegalArgumentException(
          "threshold = " + threshold + " is not allowed; allowed: a finite number > 0");
    }
    for (GraphVertex v : conf.getVertices().values()) {
      if (v instanceof LayerVertex lv) {
        Layer l = lv.getLayerConf().getLayer();
        while (l instanceof BaseWrapperLayer w) {
          l = w.getUnderlying();
        }
        if (l instanceof BaseLayer b) {
          b.setGradientNormalization(GradientNormalization.ClipL2PerParamType);
          b.setGradientNormalizationThreshold(threshold);
        }
      }
    }
    return conf;
  }

  /** Builds and initialises the network. */
  public static ComputationGraph build(GptConfig c, double learningRate) {
    ComputationGraph net = new ComputationGraph(configuration(c, learningRate));
    net.init();
    return net;
  }

  /** Position ids [batch, T] = 0..T-1 in every row. */
  public static INDArray positions(int batch, int t) {
    INDArray row = Nd4j.arange(t).castTo(DataType.FLOAT).reshape(1, t);
    return row.repeat(0, batch);
  }

  /**
   * Axis of the vocabulary in labels and output for an activation layout: 2 for NWC [B, T, V], 1
   * for NCW [B, V, T].
   */
  public static int vocabAxis(RNNFormat format) {
    return format == RNNFormat.NWC ? 2 : 1;
  }

  /** {@link #batch(int[][], int, RNNFormat)} in the {@link #DEFAULT_FORMAT}. */
  public static MultiDataSet batch(int[][] windows, int vocab) {
    return batch(windows, vocab, DEFAULT_FORMAT);
  }

  /**
   * A training batch from windows int[batch][T + 1]: features (tokens 0..T-1, positions), labels
   * one-hot next tokens, [B, T, V] for NWC or [B, V, T] for NCW.
   */
  public static MultiDataSet batch(int[][] windows, int vocab, RNNFormat format) {
    int b = windows.length, t = windows[0].length - 1;
    boolean nwc = format == RNNFormat.NWC;
    INDArray tokens = Nd4j.zeros(DataType.FLOAT, b, t);
    INDArray labels =
        nwc ? Nd4j.zeros(DataType.FLOAT, b, t, vocab) : Nd4j.zeros(DataType.FLOAT, b, vocab, t);
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        tokens.putScalar(i, j, windows[i][j]);
        labels.putScalar(
            nwc ? new long[] {i, j, windows[i][j + 1]} : new long[] {i, windows[i][j + 1], j}, 1.0);
      }
    }
    return new MultiDataSet(new INDArray[] {tokens, positions(b, t)}, new INDArray[] {labels});
  }
}
