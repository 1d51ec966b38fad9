package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * Layer configurations written as JSON by an earlier build (commit 0f8ada5, before the layers'
 * shared bases) still load, to the same configuration, and are written back as the same JSON tree.
 */
class LayerConfigJsonCompatibilityTest {

  /** The configuration the stored JSON was written from. */
  private static MultiLayerConfiguration configuration() {
    return new NeuralNetConfiguration.Builder()
        .seed(7)
        .list()
        .layer(
            new CausalSelfAttentionLayer.Builder()
                .nIn(16)
                .nOut(16)
                .nHeads(2)
                .attentionPattern("local:8")
                .blockSize(8)
                .projectionPattern("block8")
                .projectionDensity(0.5)
                .build())
        .layer(new LayerNormLayer.Builder().eps(1e-4).build())
        .layer(
            new SparseDenseLayer.Builder()
                .nIn(16)
                .nOut(32)
                .pattern("block8")
                .density(0.25)
                .hasBias(false)
                .activation(Activation.GELU)
                .build())
        .layer(
            new SparseDenseLayer.Builder()
                .nIn(32)
                .nOut(16)
                .pattern("block8")
                .density(0.5)
                .storage("packed")
                .layoutSeed(3)
                .build())
        .layer(
            new SparseOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                .nOut(4)
                .pattern("2:4")
                .density(0.5)
                .activation(Activation.IDENTITY)
                .build())
        .setInputType(InputType.recurrent(16, 8, RNNFormat.NCW))
        .build();
  }

  private static String storedJson() throws IOException {
    try (InputStream in =
        LayerConfigJsonCompatibilityTest.class.getResourceAsStream("layer-configs-0f8ada5.json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void jsonWrittenByAnEarlierBuildLoadsToTheSameConfiguration() throws IOException {
    MultiLayerConfiguration loaded = MultiLayerConfiguration.fromJson(storedJson());
    assertEquals(configuration(), loaded);
    SparseDenseLayer hidden = (SparseDenseLayer) loaded.getConf(2).getLayer();
    assertEquals("block8", hidden.getPattern());
    assertEquals(0.25, hidden.getDensity());
    assertEquals(PackedStorage.MASKED, hidden.getStorage());
    assertEquals(false, hidden.hasBias());
    SparseDenseLayer packed = (SparseDenseLayer) loaded.getConf(3).getLayer();
    assertEquals("packed", packed.getStorage());
    assertArrayEquals(new int[] {0, 2, 3, 6}, packed.getBlockLayout());
    SparseOutputLayer out = (SparseOutputLayer) loaded.getConf(4).getLayer();
    assertEquals("2:4", out.getPattern());
    assertEquals(0.5, out.getDensity());
  }

  @Test
  void jsonKeepsTheFlatKeysOfTheEarlierBuild() throws IOException {
    ObjectMapper mapper = new ObjectMapper();
    assertEquals(
        mapper.readTree(storedJson()), mapper.readTree(configuration().toJson()), "JSON tree");
  }

  @Test
  void cloneDoesNotShareTheMaskedWeightFields() {
    SparseDenseLayer dense =
        new SparseDenseLayer.Builder().nIn(16).nOut(16).pattern("block8").density(0.5).build();
    SparseDenseLayer copy = dense.clone();
    assertEquals(dense, copy);
    copy.setPattern("2:4");
    copy.setBlockLayout(new int[] {1});
    assertEquals("block8", dense.getPattern());
    assertEquals(null, dense.getBlockLayout());
    assertNotEquals(dense, copy);
    SparseOutputLayer out = new SparseOutputLayer.Builder().nIn(16).nOut(4).density(0.5).build();
    SparseOutputLayer outCopy = out.clone();
    outCopy.setDensity(0.25);
    assertEquals(0.5, out.getDensity());
  }
}
