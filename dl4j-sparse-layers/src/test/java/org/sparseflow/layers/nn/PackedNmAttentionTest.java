package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;

/** projectionStorage = packed with a 2:4 projectionPattern on CausalSelfAttentionLayer. */
class PackedNmAttentionTest {
  private static final String[] W = {"Wq", "Wk", "Wv", "Wo"};

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static MultiLayerConfiguration conf(String storage, int[][] layouts, IUpdater u) {
    CausalSelfAttentionLayer.Builder a =
        new CausalSelfAttentionLayer.Builder()
            .nIn(16)
            .nOut(16)
            .nHeads(2)
            .attentionPattern("local:4")
            .blockSize(4)
            .projectionPattern("2:4")
            .projectionDensity(0.5)
            .projectionStorage(storage);
    if (layouts != null) {
      a.projectionLayouts(layouts);
    }
    return new NeuralNetConfiguration.Builder()
        .seed(42)
        .dataType(DataType.DOUBLE)
        .updater(u)
        .list()
        .layer(a.build())
        .layer(
            new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                .activation(Activation.IDENTITY)
                .nOut(3)
                .dataFormat(RNNFormat.NCW)
                .build())
        .setInputType(InputType.recurrent(16, 8, RNNFormat.NCW))
        .build();
  }

  @Test
  void packedProjectionsMatchMaskedOnesAndPassTheGradientCheck() {
    MultiLayerNetwork masked = PackedAttentionTest.net(conf("masked", null, new NoOp()));
    int[][] words = new int[4][];
    for (int i = 0; i < 4; i++) {
      INDArray m = masked.getParam("0_M" + W[i].substring(1));
      words[i] = PackedNmLayout.of((NMMask) PatternSpec.parse("2:4").fromDense(m)).indexWords();
    }
    MultiLayerNetwork packed = PackedAttentionTest.net(conf("packed", words, new NoOp()));
    List<PackedSparseParam> params = SparseParams.findPacked(packed);
    assertEquals(4, params.size());
    for (int i = 0; i < 4; i++) {
      params.get(i).setDenseWeight(masked.getParam("0_" + W[i]));
    }
    for (String k : packed.paramTable().keySet()) {
      if (!k.startsWith("0_W")) {
        packed.setParam(k, masked.getParam(k));
      }
    }
    INDArray[] d = PackedAttentionTest.data(3);
    assertTrue(masked.output(d[0]).equalsWithEps(packed.output(d[0]), 1e-12));
    for (MultiLayerNetwork n : List.of(masked, packed)) {
      n.setInput(d[0]);
      n.setLabels(d[1]);
      n.computeGradientAndScore();
    }
    for (int i = 0; i < 4; i++) {
      PackedNmLayout l = params.get(i).nmLayout();
      INDArray gm = masked.gradient().getGradientFor("0_" + W[i]);
      INDArray gp = packed.gradient().getGradientFor("0_" + W[i]);
      assertTrue(PackedSparseParam.pack(gm, l).equalsWithEps(gp, 1e-12), W[i]);
      assertArrayEquals(new long[] {8, 16}, packed.getParam("0_" + W[i]).shape());
    }
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig().net(packed).input(d[0]).labels(d[1])));
    MultiLayerConfiguration c = packed.getLayerWiseConfigurations();
    assertEquals(c, MultiLayerConfiguration.fromJson(c.toJson()));
  }
}
