package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.mst.core.AttentionSchedule;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.Phase;
import org.sparseflow.mst.core.RampShape;
import org.sparseflow.mst.core.SparsitySchedule;

/**
 * HSA on dl4j-sparse-layers' CausalSelfAttentionLayer: local attention in the ultra phase, dense at
 * the ends.
 */
class HybridAttentionTest {

  /** |change of the last position's output| when the first token changes. */
  static double farInfluence(MultiLayerNetwork net, INDArray x) {
    INDArray y1 = net.output(x);
    INDArray x2 = x.dup();
    x2.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(0)).addi(3.0);
    INDArray y2 = net.output(x2);
    return y1.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(15))
        .sub(y2.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(15)))
        .norm2Number()
        .doubleValue();
  }

  @Test
  void attentionPatternFollowsThePhase() {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(3)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(1e-2))
                .list()
                .layer(
                    new CausalSelfAttentionLayer.Builder()
                        .nOut(8)
                        .nHeads(2)
                        .attentionPattern("dense")
                        .blockSize(4)
                        .build())
                .layer(
                    new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                        .activation(Activation.IDENTITY)
                        .nOut(2)
                        .dataFormat(RNNFormat.NCW)
                        .build())
                .setInputType(InputType.recurrent(8, 16, RNNFormat.NCW))
                .build());
    net.init();
    MstConfig c = MstConfig.preset("mst");
    c.setSchedule(
        SparsitySchedule.builder()
            .initialSparsity(0.0)
            .ultraSparsity(0.5)
            .finalSparsity(0.3)
            .warmup(0, 0.3)
            .restoration(0.7, 0.9)
            .warmupShape(RampShape.LINEAR)
            .build());
    c.setDeltaT(5);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setInclude(List.of("0_W.*"));
    c.setAttention(AttentionSchedule.sparseInUltra("local:4"));
    MstListener mst = new MstListener(c.withTotalSteps(30));
    net.setListeners(mst);
    Nd4j.getRandom().setSeed(5);
    INDArray x = Nd4j.randn(DataType.DOUBLE, 4, 8, 16);
    DataSet ds = new DataSet(x, Nd4j.randn(DataType.DOUBLE, 4, 2, 16));
    net.fit(ds);
    assertEquals(Phase.WARMUP, mst.core().phase());
    assertTrue(farInfluence(net, x) > 1e-6, "dense causal attention sees the first token");
    for (int i = 1; i < 12; i++) {
      net.fit(ds);
    }
    assertEquals(Phase.ULTRA, mst.core().phase());
    CausalSelfAttentionLayer conf = (CausalSelfAttentionLayer) net.getLayer(0).conf().getLayer();
    assertEquals("local:4", conf.getAttentionPattern());
    assertEquals(0.0, farInfluence(net, x), 1e-12, "local:4 attention cannot see 15 tokens back");
    for (int i = 12; i < 22; i++) {
      net.fit(ds);
    }
    assertEquals(Phase.RESTORATION, mst.core().phase());
    assertEquals("dense", conf.getAttentionPattern());
    assertTrue(farInfluence(net, x) > 1e-6);
  }
}
