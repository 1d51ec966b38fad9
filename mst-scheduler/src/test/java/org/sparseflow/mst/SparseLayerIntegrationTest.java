package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.rng.Random;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.mst.core.MstConfig;

/** MST driving dl4j-sparse-layers' masked layers (mask param M, dense gradient on request). */
class SparseLayerIntegrationTest {

  private static SparseDenseLayer sparseDense() {
    return new SparseDenseLayer.Builder()
        .nIn(12)
        .nOut(32)
        .pattern("unstructured")
        .density(1.0)
        .activation(Activation.TANH)
        .build();
  }

  private static MultiLayerNetwork net(Layer first, Layer out) {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(7)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(1e-2))
                .list()
                .layer(first)
                .layer(out)
                .build());
    net.init();
    return net;
  }

  /** An MST listener (40-step test schedule) on weight 0_W, attached to {@code net}. */
  private static MstListener mstOnFirstWeight(MultiLayerNetwork net) {
    MstConfig c = Dl4jListenerTest.config(40);
    c.setInclude(List.of("0_W"));
    MstListener mst = new MstListener(c);
    net.setListeners(mst);
    return mst;
  }

  @Test
  void drivesSparseDenseLayerMaskParamAndDenseGradient() {
    MultiLayerNetwork net =
        net(
            sparseDense(),
            new OutputLayer.Builder(LossFunctions.LossFunction.MSE)
                .nIn(32)
                .nOut(3)
                .activation(Activation.IDENTITY)
                .build());
    MstListener mst = mstOnFirstWeight(net);
    List<DataSet> d = Dl4jListenerTest.data(30);
    for (int i = 0; i < 30; i++) {
      net.fit(d.get(i));
      INDArray mask = Dl4jListenerTest.maskOf(mst, "0_W");
      assertEquals(mask, net.getParam("0_M"), "layer mask param follows MST's mask at step " + i);
      assertEquals(0.0, net.getParam("0_W").mul(mask.rsub(1)).norm1Number().doubleValue(), 0.0);
    }
    // MIXED growth needs the dense gradient: updates would have thrown without it
    assertEquals(6, mst.core().topologyUpdates()); // after steps 4, 9, ..., 29
  }

  /**
   * Wrapped in TimeDistributed (as in ComputationGraphGpt), MST still drives the inner layer's mask
   * param.
   */
  @Test
  void drivesTheMaskOfASparseLayerInsideTimeDistributed() {
    MultiLayerNetwork net =
        net(
            new TimeDistributed(sparseDense(), RNNFormat.NCW),
            new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                .nIn(32)
                .nOut(3)
                .dataFormat(RNNFormat.NCW)
                .activation(Activation.IDENTITY)
                .build());
    MstListener mst = mstOnFirstWeight(net);
    Random rng = Nd4j.getRandom();
    rng.setSeed(3);
    for (int i = 0; i < 12; i++) {
      net.fit(
          new DataSet(Nd4j.rand(DataType.DOUBLE, 4, 12, 5), Nd4j.rand(DataType.DOUBLE, 4, 3, 5)));
      INDArray mask = Dl4jListenerTest.maskOf(mst, "0_W");
      assertEquals(
          mask, net.getParam("0_M"), "wrapped layer's mask param follows MST's mask at step " + i);
    }
    assertTrue(
        net.getParam("0_M").meanNumber().doubleValue() < 0.9, "MST sparsified the wrapped layer");
    assertTrue(
        mst.core().topologyUpdates() >= 2,
        "topology updates with the dense gradient of the wrapped layer");
  }

  @Test
  void mstSectionOfSparsityConfig() {
    SparsityConfig sc =
        SparsityConfig.fromYaml(
            "sparsity: 0.9\n"
                + "mst:\n"
                + "  name: mine\n"
                + "  deltaT: 50\n"
                + "  growMode: GRADIENT\n"
                + "  schedule: {initialSparsity: 0.0, ultraSparsity: 0.8, finalSparsity: 0.8,"
                + " warmupEnd: 0.5}\n");
    MstConfig c = MstConfig.fromSparsityConfigSection(sc.getMst(), "mst");
    assertEquals("mine", c.getName());
    assertEquals(50, c.getDeltaT());
    assertEquals(0.8, c.withTotalSteps(100).getSchedule().sparsityAt(60));
    assertEquals("mst", MstConfig.fromSparsityConfigSection(null, "mst").getName());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                MstConfig.fromSparsityConfigSection(
                    SparsityConfig.fromYaml("mst:\n  deltaT: 0\n").getMst(), "mst"));
    assertTrue(e.getMessage().contains("deltaT = 0"), e.getMessage());
  }
}
