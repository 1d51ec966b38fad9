package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * CausalSelfAttentionLayer with block-sparse projections as narrow as a head: the initial masks
 * leave every head a kept Q·Kᵀ block column and V / output blocks, so every head's Wq, Wk, Wv and
 * Wo get gradient.
 */
class AttentionHeadMasksTest {
  static final int HEADS = 4, D = 8, C = HEADS * D, T = 8;

  static MultiLayerNetwork net(long seed) {
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(seed)
            .dataType(DataType.DOUBLE)
            .updater(new NoOp())
            .list()
            .layer(
                new CausalSelfAttentionLayer.Builder()
                    .nOut(C)
                    .nHeads(HEADS)
                    .attentionPattern("dense")
                    .blockSize(4)
                    .projectionPattern("block8")
                    .projectionDensity(0.25)
                    .build())
            .layer(
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(3)
                    .dataFormat(RNNFormat.NCW)
                    .build())
            .setInputType(InputType.recurrent(C, T, RNNFormat.NCW))
            .build();
    MultiLayerNetwork n = new MultiLayerNetwork(c);
    n.init();
    return n;
  }

  @Test
  void everyHeadReceivesGradient() {
    for (long seed = 1; seed <= 6; seed++) {
      MultiLayerNetwork n = net(seed);
      Nd4j.getRandom().setSeed(seed);
      n.setInput(Nd4j.rand(DataType.DOUBLE, 2, C, T).subi(0.5));
      n.setLabels(Nd4j.rand(DataType.DOUBLE, 2, 3, T));
      n.computeGradientAndScore();
      for (int h = 0; h < HEADS; h++) {
        for (String w : new String[] {"Wq", "Wk", "Wv"}) {
          INDArray g =
              n.gradient()
                  .getGradientFor("0_" + w)
                  .get(NDArrayIndex.all(), NDArrayIndex.interval(h * D, (h + 1) * D));
          assertTrue(g.amaxNumber().doubleValue() > 0, "seed " + seed + " head " + h + " " + w);
        }
        INDArray go =
            n.gradient().getGradientFor("0_Wo").get(NDArrayIndex.interval(h * D, (h + 1) * D));
        assertTrue(go.amaxNumber().doubleValue() > 0, "seed " + seed + " head " + h + " Wo");
      }
    }
  }
}
