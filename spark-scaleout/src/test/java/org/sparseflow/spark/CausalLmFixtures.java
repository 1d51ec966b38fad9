package org.sparseflow.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.EmbeddingSequenceLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.mst.core.MstConfig;

/**
 * A GPT-style causal language model small enough for CI: token embedding, one multi-head causal
 * self-attention block with sparse (MST-driven) Q/K/V/O projections, softmax head over the
 * vocabulary at every position.
 */
final class CausalLmFixtures {
  static final int VOCAB = 8;
  static final int T = 16;
  static final int D = 32;
  static final int BATCH = 8;

  private CausalLmFixtures() {}

  /**
   * @param updater e.g. {@link ScaleOutFixtures#decayingAdam}; the same for the single-machine and
   *     the Spark run
   */
  static MultiLayerNetwork causalLm(long seed, IUpdater updater) {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(seed)
                .dataType(DataType.FLOAT)
                .updater(updater)
                .list()
                .layer(
                    new EmbeddingSequenceLayer.Builder()
                        .nIn(VOCAB)
                        .nOut(D)
                        .inputLength(T)
                        .outputDataFormat(RNNFormat.NCW)
                        .build())
                .layer(
                    new CausalSelfAttentionLayer.Builder()
                        .nIn(D)
                        .nOut(D)
                        .nHeads(2)
                        .attentionPattern("dense")
                        .projectionPattern("unstructured")
                        .projectionDensity(1.0)
                        .build())
                .layer(
                    new RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                        .nIn(D)
                        .nOut(VOCAB)
                        .activation(Activation.SOFTMAX)
                        .dataFormat(RNNFormat.NCW)
                        .build())
                .build());
    net.init();
    return net;
  }

  /** MST on the attention projections only (embedding and head stay dense). */
  static MstConfig mst(int deltaT, int intervals) {
    MstConfig c = ScaleOutFixtures.mst(deltaT, intervals);
    c.setInclude(List.of("1_W.*"));
    return c.withTotalSteps((long) deltaT * intervals);
  }

  /**
   * Sequences where token t+1 is (3 token[t] + 1) mod VOCAB with 10% noise (a bigram language the
   * one attention block can learn by attending to the current token; uniform guessing scores T ln
   * VOCAB = 33.3).
   */
  static List<DataSet> data(int batches, long seed) {
    Random r = new Random(seed);
    List<DataSet> out = new ArrayList<>();
    for (int b = 0; b < batches; b++) {
      INDArray x = Nd4j.zeros(DataType.FLOAT, BATCH, T);
      INDArray y = Nd4j.zeros(DataType.FLOAT, BATCH, VOCAB, T);
      for (int i = 0; i < BATCH; i++) {
        int[] s = new int[T + 1];
        for (int t = 0; t <= T; t++) {
          s[t] = t == 0 || r.nextDouble() < 0.1 ? r.nextInt(VOCAB) : (3 * s[t - 1] + 1) % VOCAB;
        }
        for (int t = 0; t < T; t++) {
          x.putScalar(i, t, s[t]);
          y.putScalar(new int[] {i, s[t + 1], t}, 1f);
        }
      }
      out.add(new DataSet(x, y));
    }
    return out;
  }

  /**
   * Loss of the true next-token distribution on {@code d} (per sequence, as {@code score} reports
   * it): the target is the bigram successor with probability 0.9 + 0.1/VOCAB, any other token with
   * 0.1/VOCAB.
   */
  static double bayesLoss(DataSet d) {
    INDArray x = d.getFeatures();
    INDArray y = d.getLabels();
    double pNext = 0.9 + 0.1 / VOCAB;
    double pOther = 0.1 / VOCAB;
    double sum = 0;
    for (int i = 0; i < x.size(0); i++) {
      for (int t = 0; t < T; t++) {
        int next = (3 * x.getInt(i, t) + 1) % VOCAB;
        sum -= Math.log(y.getDouble(i, next, t) > 0.5 ? pNext : pOther);
      }
    }
    return sum / x.size(0);
  }
}
