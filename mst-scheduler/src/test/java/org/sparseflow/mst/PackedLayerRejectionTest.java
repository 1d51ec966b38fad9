package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.mst.core.MstConfig;

/** A layer with storage = packed has a fixed layout: MST must refuse it with a clear error. */
class PackedLayerRejectionTest {

  @Test
  void mstOnAPackedLayerFailsNamingTheWeightAndTheFix() {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(7)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(1e-2))
                .list()
                .layer(
                    new SparseDenseLayer.Builder()
                        .nIn(16)
                        .nOut(32)
                        .pattern("block8")
                        .density(0.5)
                        .storage("packed")
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new OutputLayer.Builder(LossFunctions.LossFunction.MSE)
                        .nIn(32)
                        .nOut(3)
                        .activation(Activation.IDENTITY)
                        .build())
                .build());
    net.init();
    MstConfig c = Dl4jListenerTest.config(40);
    c.setInclude(List.of("0_W"));
    net.setListeners(new MstListener(c));
    DataSet d = new DataSet(Nd4j.rand(DataType.DOUBLE, 8, 16), Nd4j.rand(DataType.DOUBLE, 8, 3));
    RuntimeException e = assertThrows(RuntimeException.class, () -> net.fit(d));
    Throwable t = e;
    while (t.getCause() != null && !t.getMessage().contains("stored packed")) {
      t = t.getCause();
    }
    assertTrue(t.getMessage().contains("'0_W' is stored packed"), e.toString());
    assertTrue(t.getMessage().contains("storage = masked"), t.getMessage());
  }
}
