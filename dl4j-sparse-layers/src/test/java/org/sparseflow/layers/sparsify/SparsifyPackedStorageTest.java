package org.sparseflow.layers.sparsify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.Arrays;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;

/**
 * {@code storage: packed} in the sparsity config: validation and DL4J models (SameDiff:
 * SameDiffPackedStorageTest).
 */
class SparsifyPackedStorageTest {

  private static SparsityConfig config(String storage) {
    return SparsityConfig.builder()
        .pattern("block16")
        .sparsity(0.75)
        .initialMask(InitialMask.MAGNITUDE)
        .keepFirstDense(true)
        .keepLastDense(true)
        .storage(storage)
        .build();
  }

  @Test
  void storageRoundTripsAndBadValuesNameTheFieldAndTheRule() {
    SparsityConfig c = config("packed");
    assertEquals(c, SparsityConfig.fromYaml(c.toYaml()));
    assertEquals(
        "packed", SparsityConfig.fromYaml("pattern: block32\nstorage: packed").getStorage());
    assertEquals("masked", SparsityConfig.fromYaml("pattern: block32").getStorage());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsityConfig.fromYaml("pattern: block16\nstorage: compressed"));
    assertTrue(e.getMessage().contains("'storage' has value 'compressed'"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsityConfig.fromYaml("pattern: unstructured\nstorage: packed"));
    assertTrue(e.getMessage().contains("'storage' has value 'packed'"), e.getMessage());
    assertTrue(e.getMessage().contains("pattern 'unstructured'"), e.getMessage());
    assertTrue(e.getMessage().contains("n:m such as 2:4"), e.getMessage());
    assertEquals("packed", SparsityConfig.fromYaml("pattern: 2:4\nstorage: packed").getStorage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsityConfig.fromYaml("pattern: block16\nstorage: packed\nmst: {deltaT: 10}"));
    assertTrue(e.getMessage().contains("mst section"), e.getMessage());
  }

  @Test
  void initialisedNetworkGetsPackedLayersEqualToMaskedOnes(@TempDir File dir) throws Exception {
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
    }
    assertTrue(packed.numParams() < net.numParams(), packed.numParams() + " params");
    // magnitude masks from the same trained weights: same function, same densified weights
    INDArray x = ds.getFeatures();
    assertTrue(masked.output(x).equalsWithEps(packed.output(x), 1e-5));
    assertTrue(
        Sparsify.densify(masked).params().equalsWithEps(Sparsify.densify(packed).params(), 0));
    // model-file round trip and training continue on the packed layers
    File f = new File(dir, "packed.zip");
    ModelSerializer.writeModel(packed, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(packed.params(), back.params());
    back.fit(ds);
    assertTrue(Double.isFinite(back.score()));
  }

  @Test
  void configurationGetsPackedLayersWithSeededLayoutsAndReportedDensity() {
    MultiLayerConfiguration conf = Sparsify.apply(config("packed"), SparsifyDl4jTest.mlp()).model();
    SparseDenseLayer l = (SparseDenseLayer) conf.getConf(2).getLayer();
    assertEquals("packed", l.getStorage());
    assertEquals(2, l.getBlockLayout().length); // 32 x 64, block16: 8 blocks, a quarter kept
    MultiLayerConfiguration again =
        Sparsify.apply(config("packed"), SparsifyDl4jTest.mlp()).model();
    assertEquals(
        Arrays.toString(l.getBlockLayout()),
        Arrays.toString(((SparseDenseLayer) again.getConf(2).getLayer()).getBlockLayout()));
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    net.fit(SparsifyDl4jTest.data(6));
    assertTrue(Double.isFinite(net.score()));
  }
}
