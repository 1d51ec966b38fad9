package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.*;

import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;

class LayerNormLayerTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static MultiLayerNetwork net() {
    return net(
        new OutputLayer.Builder(LossFunctions.LossFunction.MSE)
            .activation(Activation.IDENTITY)
            .nOut(3)
            .build(),
        InputType.feedForward(5));
  }

  static MultiLayerNetwork recurrentNet() {
    return recurrentNet(RNNFormat.NCW);
  }

  /** The layer takes its layout from the recurrent input type. */
  static MultiLayerNetwork recurrentNet(RNNFormat format) {
    return net(
        new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
            .activation(Activation.IDENTITY)
            .nOut(3)
            .dataFormat(format)
            .build(),
        InputType.recurrent(5, 4, format));
  }

  /** LayerNorm over 5 features with fixed gain and bias, then {@code out}. */
  static MultiLayerNetwork net(Layer out, InputType in) {
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(2)
            .dataType(DataType.DOUBLE)
            .updater(new NoOp())
            .list()
            .layer(new LayerNormLayer.Builder().eps(1e-5).build())
            .layer(out)
            .setInputType(in)
            .build();
    MultiLayerNetwork n = new MultiLayerNetwork(c);
    n.init();
    n.getParam("0_g").assign(Nd4j.create(new double[][] {{0.5, 1.5, -1.0, 2.0, 0.7}}));
    n.getParam("0_b").assign(Nd4j.create(new double[][] {{0.1, -0.2, 0.3, 0.0, 1.0}}));
    return n;
  }

  @Test
  void matchesHandComputedNormalisation() {
    MultiLayerNetwork n = net();
    INDArray x = Nd4j.create(new double[][] {{1, 2, 3, 4, 5}, {-3, 0.5, 7, 2, 2}});
    INDArray y = n.feedForward(x).get(1);
    for (int r = 0; r < 2; r++) {
      double mean = 0, var = 0;
      for (int j = 0; j < 5; j++) {
        mean += x.getDouble(r, j) / 5;
      }
      for (int j = 0; j < 5; j++) {
        var += Math.pow(x.getDouble(r, j) - mean, 2) / 5;
      }
      for (int j = 0; j < 5; j++) {
        double e =
            (x.getDouble(r, j) - mean) / Math.sqrt(var + 1e-5) * n.getParam("0_g").getDouble(0, j)
                + n.getParam("0_b").getDouble(0, j);
        assertEquals(e, y.getDouble(r, j), 1e-12);
      }
    }
  }

  @Test
  void gradientCheckFeedForward() {
    Nd4j.getRandom().setSeed(3);
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig()
                .net(net())
                .input(Nd4j.rand(DataType.DOUBLE, 3, 5))
                .labels(Nd4j.rand(DataType.DOUBLE, 3, 3))));
  }

  /**
   * The fused kernel reads NCW input in any order or as a permuted view; statistics per (example,
   * step).
   */
  @Test
  void recurrentInputInAnyLayoutNormalisesEveryTimeStep() {
    MultiLayerNetwork n = recurrentNet();
    Nd4j.getRandom().setSeed(5);
    INDArray base = Nd4j.rand(DataType.DOUBLE, 2, 5, 4).muli(4).subi(2);
    INDArray[] layouts = {
      base.dup('c'), base.dup('f'), base.permute(0, 2, 1).dup('c').permute(0, 2, 1)
    };
    for (INDArray x : layouts) {
      INDArray y = n.feedForward(x).get(1);
      for (int b = 0; b < 2; b++) {
        for (int t = 0; t < 4; t++) {
          double mean = 0, var = 0;
          for (int j = 0; j < 5; j++) {
            mean += base.getDouble(b, j, t) / 5;
          }
          for (int j = 0; j < 5; j++) {
            var += Math.pow(base.getDouble(b, j, t) - mean, 2) / 5;
          }
          for (int j = 0; j < 5; j++) {
            double e =
                (base.getDouble(b, j, t) - mean)
                        / Math.sqrt(var + 1e-5)
                        * n.getParam("0_g").getDouble(0, j)
                    + n.getParam("0_b").getDouble(0, j);
            assertEquals(
                e, y.getDouble(b, j, t), 1e-12, "layout " + x.ordering() + " view=" + x.isView());
          }
        }
      }
    }
  }

  @Test
  void gradientCheckRecurrent() {
    Nd4j.getRandom().setSeed(4);
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig()
                .net(recurrentNet())
                .input(Nd4j.rand(DataType.DOUBLE, 3, 5, 4))
                .labels(Nd4j.rand(DataType.DOUBLE, 3, 3, 4))));
  }

  /**
   * NWC [B, T, n] in any memory order gives the NCW result transposed; the layer learned NWC from
   * the input type.
   */
  @Test
  void nwcInputMatchesNcw() {
    MultiLayerNetwork ncw = recurrentNet(RNNFormat.NCW), nwc = recurrentNet(RNNFormat.NWC);
    assertEquals(
        RNNFormat.NWC, ((LayerNormLayer) nwc.getLayer(0).conf().getLayer()).getDataFormat());
    Nd4j.getRandom().setSeed(6);
    INDArray base = Nd4j.rand(DataType.DOUBLE, 2, 5, 4).muli(4).subi(2);
    INDArray expected = ncw.feedForward(base).get(1).permute(0, 2, 1);
    INDArray t = base.permute(0, 2, 1);
    for (INDArray x : new INDArray[] {t.dup('c'), t.dup('f'), t}) {
      INDArray y = nwc.feedForward(x).get(1);
      assertArrayEquals(new long[] {2, 4, 5}, y.shape());
      assertTrue(
          expected.equalsWithEps(y, 1e-12), "layout " + x.ordering() + " view=" + x.isView());
    }
  }

  @Test
  void gradientCheckNwc() {
    Nd4j.getRandom().setSeed(7);
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig()
                .net(recurrentNet(RNNFormat.NWC))
                .input(Nd4j.rand(DataType.DOUBLE, 3, 4, 5))
                .labels(Nd4j.rand(DataType.DOUBLE, 3, 4, 3))));
  }

  @Test
  void badConfig() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> new LayerNormLayer.Builder().eps(0).build());
    assertTrue(
        e.getMessage().contains("eps")
            && e.getMessage().contains("0.0")
            && e.getMessage().contains("> 0"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new LayerNormLayer.Builder().nIn(4).nOut(5).build());
    assertTrue(e.getMessage().contains("nOut") && e.getMessage().contains("5"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> new LayerNormLayer.Builder().dataFormat(null));
    assertTrue(
        e.getMessage().contains("dataFormat") && e.getMessage().contains("NWC"), e.getMessage());
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(new LayerNormLayer.Builder().nIn(8).dataFormat(RNNFormat.NWC).build())
            .build();
    assertEquals(c, MultiLayerConfiguration.fromJson(c.toJson()));
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    assertNotEquals(
        c,
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(new LayerNormLayer.Builder().nIn(8).build())
            .build());
  }
}
