package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.List;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;

/** storage = packed with N:M patterns on SparseDenseLayer / SparseOutputLayer (issue 23). */
class PackedNmStorageTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  /** Two-layer net; storage "masked" or "packed"; words (null: random) for the packed layers. */
  static MultiLayerConfiguration conf(
      String storage, String pattern, int[] shape, IUpdater u, int[][] words) {
    SparseDenseLayer.Builder h =
        new SparseDenseLayer.Builder()
            .nIn(shape[0])
            .nOut(shape[1])
            .pattern(pattern)
            .density(PatternSpec.parse(pattern).fixedDensity())
            .storage(storage)
            .activation(Activation.TANH);
    SparseOutputLayer.Builder o =
        new SparseOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
            .nIn(shape[1])
            .nOut(shape[2])
            .pattern(pattern)
            .density(PatternSpec.parse(pattern).fixedDensity())
            .storage(storage)
            .activation(Activation.SOFTMAX);
    if (words != null) {
      h.blockLayout(words[0]);
      o.blockLayout(words[1]);
    }
    return new NeuralNetConfiguration.Builder()
        .seed(7)
        .dataType(DataType.DOUBLE)
        .updater(u)
        .list()
        .layer(h.build())
        .layer(o.build())
        .build();
  }

  static MultiLayerNetwork net(MultiLayerConfiguration c) {
    return PackedStorageTest.net(c);
  }

  static DataSet data(int n, int nIn, int classes, long seed) {
    return PackedStorageTest.data(n, nIn, classes, seed);
  }

  static PackedNmLayout layoutOf(INDArray mask01, String pattern) {
    return PackedNmLayout.of((NMMask) PatternSpec.parse(pattern).fromDense(mask01));
  }

  /** A packed twin of a masked net: same kept weights, same values. */
  static MultiLayerNetwork packedTwin(
      MultiLayerNetwork masked, String pattern, IUpdater u, int[] shape) {
    PackedNmLayout l0 = layoutOf(masked.getParam("0_M"), pattern);
    PackedNmLayout l1 = layoutOf(masked.getParam("1_M"), pattern);
    MultiLayerNetwork p =
        net(conf("packed", pattern, shape, u, new int[][] {l0.indexWords(), l1.indexWords()}));
    List<PackedSparseParam> packed = SparseParams.findPacked(p);
    assertEquals(List.of("0_W", "1_W"), packed.stream().map(PackedSparseParam::name).toList());
    assertEquals(l0, packed.get(0).nmLayout());
    assertNull(packed.get(0).layout());
    packed.get(0).setDenseWeight(masked.getParam("0_W"));
    packed.get(1).setDenseWeight(masked.getParam("1_W"));
    p.setParam("0_b", masked.getParam("0_b"));
    p.setParam("1_b", masked.getParam("1_b"));
    return p;
  }

  @Test
  void paramsAreOnlyTheKeptValuesAndBias() {
    MultiLayerNetwork n = net(conf("packed", "2:4", new int[] {32, 64, 16}, new Adam(1e-3), null));
    assertArrayEquals(new long[] {16, 64}, n.getParam("0_W").shape());
    assertArrayEquals(new long[] {32, 16}, n.getParam("1_W").shape());
    assertNull(n.paramTable().get("0_M"));
    long expected = 16 * 64 + 64 + 32 * 16 + 16;
    assertEquals(expected, n.numParams());
    n.fit(data(4, 32, 16, 1));
    assertEquals(expected, n.getGradientsViewArray().length());
    assertEquals(2 * expected, n.getUpdater().getStateViewArray().length()); // Adam m, v
    PackedSparseParam p = SparseParams.findPacked(n).get(0);
    assertEquals(2, p.updaterState().size(), "Adam state of kept weights");
    assertArrayEquals(new long[] {16, 64}, p.updaterState().get(0).shape());
    // 32 x 64 at 2:4: 1024 kept weights, 2 bits each = 64 int words
    assertEquals(64, ((SparseDenseLayer) n.getLayer(0).conf().getLayer()).getBlockLayout().length);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparseParams.find(n));
    assertTrue(e.getMessage().contains("findPacked"), e.getMessage());
  }

  @Test
  void gradientCheckDoublePrecision() {
    for (String pattern : List.of("2:4", "1:4", "2:8")) {
      MultiLayerNetwork n = net(conf("packed", pattern, new int[] {16, 24, 8}, new NoOp(), null));
      DataSet d = data(5, 16, 8, 3);
      assertTrue(
          GradientCheckUtil.checkGradients(
              new GradientCheckUtil.MLNConfig()
                  .net(n)
                  .input(d.getFeatures())
                  .labels(d.getLabels())),
          pattern);
    }
  }

  @Test
  void sameOutputsGradientsAndTrainingAsTheMaskedLayer() {
    for (String pattern : List.of("2:4", "1:4", "2:8")) {
      int[] shape = {24, 32, 13}; // odd nOut on the output layer
      MultiLayerNetwork masked = net(conf("masked", pattern, shape, new Adam(0.02), null));
      MultiLayerNetwork packed = packedTwin(masked, pattern, new Adam(0.02), shape);
      DataSet d = data(6, 24, 13, 4);
      assertTrue(
          masked.output(d.getFeatures()).equalsWithEps(packed.output(d.getFeatures()), 1e-12));
      for (MultiLayerNetwork n : List.of(masked, packed)) {
        n.setInput(d.getFeatures());
        n.setLabels(d.getLabels());
        n.computeGradientAndScore();
      }
      assertEquals(masked.score(), packed.score(), 1e-12);
      for (int i = 0; i < 2; i++) {
        PackedNmLayout l = SparseParams.findPacked(packed).get(i).nmLayout();
        INDArray maskedGrad = masked.gradient().getGradientFor(i + "_W");
        INDArray packedGrad = packed.gradient().getGradientFor(i + "_W");
        assertTrue(
            PackedSparseParam.pack(maskedGrad, l).equalsWithEps(packedGrad, 1e-12),
            pattern + " dW of " + i);
      }
      for (int s = 0; s < 3; s++) {
        masked.fit(d);
        packed.fit(d);
      }
      for (int i = 0; i < 2; i++) {
        INDArray dense = SparseParams.findPacked(packed).get(i).denseWeight();
        assertTrue(
            masked.getParam(i + "_W").equalsWithEps(dense, 1e-10), pattern + " W after Adam " + i);
      }
    }
  }

  @Test
  void jsonRoundTripKeepsStorageAndIndexWords() {
    MultiLayerConfiguration c = conf("packed", "2:4", new int[] {16, 24, 8}, new Adam(1e-3), null);
    MultiLayerConfiguration back = MultiLayerConfiguration.fromJson(c.toJson());
    assertEquals(c, back);
    assertEquals(c.toJson(), back.toJson());
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    SparseDenseLayer l = (SparseDenseLayer) back.getConf(0).getLayer();
    assertEquals("packed", l.getStorage());
    assertArrayEquals(
        ((SparseDenseLayer) c.getConf(0).getLayer()).getBlockLayout(), l.getBlockLayout());
    assertEquals(12, l.getBlockLayout().length); // 16 x 24 at 2:4: 192 kept x 2 bits
    // corrupted index words in a configuration are refused when the network is built
    MultiLayerConfiguration badConf = MultiLayerConfiguration.fromJson(c.toJson());
    ((SparseDenseLayer) badConf.getConf(0).getLayer()).setBlockLayout(new int[12]);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> net(badConf));
    assertTrue(e.getMessage().contains("strictly ascending"), e.getMessage());
  }

  @Test
  void modelFileRoundTripAndResume(@TempDir File dir) throws Exception {
    MultiLayerNetwork n = net(conf("packed", "2:4", new int[] {16, 24, 8}, new Adam(0.01), null));
    DataSet d = data(8, 16, 8, 5);
    n.fit(d);
    File f = new File(dir, "packed.zip");
    ModelSerializer.writeModel(n, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(n.getLayerWiseConfigurations(), back.getLayerWiseConfigurations());
    assertEquals(n.params(), back.params());
    assertEquals(n.getUpdater().getStateViewArray(), back.getUpdater().getStateViewArray());
    assertEquals(n.output(d.getFeatures()), back.output(d.getFeatures()));
    back.fit(d);
    n.fit(d);
    assertEquals(n.params(), back.params());
  }

  @Test
  void densifyUnpacksTheKeptWeights() {
    MultiLayerNetwork n = net(conf("packed", "2:4", new int[] {16, 24, 8}, new Adam(0.01), null));
    DataSet d = data(4, 16, 8, 8);
    n.fit(d);
    MultiLayerNetwork dense = Sparsify.densify(n);
    assertInstanceOf(DenseLayer.class, dense.getLayerWiseConfigurations().getConf(0).getLayer());
    assertTrue(n.output(d.getFeatures()).equalsWithEps(dense.output(d.getFeatures()), 1e-12));
    INDArray w = dense.getParam("0_W");
    PackedSparseParam p = SparseParams.findPacked(n).get(0);
    assertEquals(p.denseWeight(), w);
    // every group of 4 rows keeps exactly 2 per column
    assertEquals(p.sparseMask(), PatternSpec.nm(2, 4).fromDense(w.neq(0).castTo(DataType.DOUBLE)));
  }

  @Test
  void rejectsUnstructuredAndGroupsThatDoNotDivideNIn() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new SparseOutputLayer.Builder()
                    .nIn(16)
                    .nOut(16)
                    .pattern("unstructured")
                    .density(0.5)
                    .storage("packed")
                    .build());
    assertTrue(e.getMessage().contains("pattern = 'unstructured'"), e.getMessage());
    assertTrue(e.getMessage().contains("block8|16|32|64 or n:m"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new SparseDenseLayer.Builder()
                    .nIn(18)
                    .nOut(16)
                    .pattern("2:4")
                    .density(0.5)
                    .storage("packed")
                    .build());
    assertTrue(e.getMessage().contains("18"), e.getMessage());
  }
}
