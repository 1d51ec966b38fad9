package org.sparseflow.layers.sparsify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;

/** {@code storage: packed} with a 2:4 pattern on a trained DL4J network. */
class SparsifyPackedNmTest {

  private static SparsityConfig config(String storage) {
    return SparsityConfig.builder()
        .pattern("2:4")
        .sparsity(0.5)
        .initialMask(InitialMask.MAGNITUDE)
        .keepFirstDense(true)
        .keepLastDense(true)
        .storage(storage)
        .build();
  }

  @Test
  void trainedNetworkGetsPacked2to4LayersEqualToMaskedOnes(@TempDir File dir) throws Exception {
    MultiLayerNetwork net = new MultiLayerNetwork(SparsifyDl4jTest.mlp());
    net.init();
    DataSet ds = SparsifyDl4jTest.data(5);
    net.fit(ds);
    MultiLayerNetwork packed = Sparsify.apply(config("packed"), net).model();
    MultiLayerNetwork masked = Sparsify.apply(config("masked"), net).model();
    for (int i = 1; i <= 2; i++) {
      SparseDenseLayer l =
          assertInstanceOf(
              SparseDenseLayer.class, packed.getLayerWiseConfigurations().getConf(i).getLayer());
      assertEquals("packed", l.getStorage());
      assertEquals("2:4", l.getPattern());
    }
    assertEquals(2, SparseParams.findPacked(packed).size());
    // the packed values of layers 1 and 2 are half of their dense weights
    assertEquals(32 * 32 / 2, packed.getParam("1_W").length());
    assertEquals(32 * 64 / 2, packed.getParam("2_W").length());
    // magnitude masks from the same trained weights: same function, same densified weights
    INDArray x = ds.getFeatures();
    assertTrue(masked.output(x).equalsWithEps(packed.output(x), 1e-5));
    for (int i = 1; i <= 2; i++) {
      PackedSparseParam p = SparseParams.findPacked(packed).get(i - 1);
      INDArray maskedW = masked.getParam(i + "_W").mul(masked.getParam(i + "_M"));
      assertEquals(maskedW, p.denseWeight(), "layer " + i);
    }
    assertTrue(
        Sparsify.densify(masked).params().equalsWithEps(Sparsify.densify(packed).params(), 0));
    // model-file round trip and training continue on the packed layers
    File f = new File(dir, "packed24.zip");
    ModelSerializer.writeModel(packed, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(packed.params(), back.params());
    assertTrue(back.output(x).equalsWithEps(packed.output(x), 0));
    back.fit(ds);
    assertTrue(Double.isFinite(back.score()));
  }
}
