package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.List;
import java.util.Random;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
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
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/** storage = packed on SparseDenseLayer / SparseOutputLayer (issue 23). */
class PackedStorageTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  /** Two-layer net; storage "masked" or "packed"; layouts (null: random) used for packed layers. */
  static MultiLayerConfiguration conf(
      String storage, int nIn, int hidden, int nOut, double density, IUpdater u, int[][] layouts) {
    SparseDenseLayer.Builder h =
        new SparseDenseLayer.Builder()
            .nIn(nIn)
            .nOut(hidden)
            .pattern("block8")
            .density(density)
            .storage(storage)
            .activation(Activation.TANH);
    SparseOutputLayer.Builder o =
        new SparseOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
            .nIn(hidden)
            .nOut(nOut)
            .pattern("block8")
            .density(density)
            .storage(storage)
            .activation(Activation.SOFTMAX);
    if (layouts != null) {
      h.blockLayout(layouts[0]);
      o.blockLayout(layouts[1]);
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
    MultiLayerNetwork n = new MultiLayerNetwork(c);
    n.init();
    return n;
  }

  static DataSet data(int n, int nIn, int classes, long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray x = Nd4j.rand(DataType.DOUBLE, n, nIn).subi(0.5);
    INDArray y = Nd4j.zeros(DataType.DOUBLE, n, classes);
    Random r = new Random(seed);
    for (int i = 0; i < n; i++) {
      y.putScalar(i, r.nextInt(classes), 1.0);
    }
    return new DataSet(x, y);
  }

  static PackedLayout layoutOf(INDArray mask01) {
    return PackedLayout.of((BlockMask) PatternSpec.parse("block8").fromDense(mask01));
  }

  /** A packed twin of a masked net: same kept blocks, same values. */
  static MultiLayerNetwork packedTwin(MultiLayerNetwork masked, IUpdater u, int[] shape) {
    PackedLayout l0 = layoutOf(masked.getParam("0_M"));
    PackedLayout l1 = layoutOf(masked.getParam("1_M"));
    MultiLayerNetwork p =
        net(
            conf(
                "packed",
                shape[0],
                shape[1],
                shape[2],
                0.5,
                u,
                new int[][] {l0.keptRowMajor(), l1.keptRowMajor()}));
    List<PackedSparseParam> packed = SparseParams.findPacked(p);
    assertEquals(List.of("0_W", "1_W"), packed.stream().map(PackedSparseParam::name).toList());
    packed.get(0).setDenseWeight(masked.getParam("0_W"));
    packed.get(1).setDenseWeight(masked.getParam("1_W"));
    p.setParam("0_b", masked.getParam("0_b"));
    p.setParam("1_b", masked.getParam("1_b"));
    return p;
  }

  @Test
  void paramsAreOnlyTheKeptBlocksAndBias() {
    MultiLayerNetwork n = net(conf("packed", 32, 64, 16, 0.25, new Adam(1e-3), null));
    // 32x64 block8 = 32 blocks, 8 kept; 64x16 = 16 blocks, 4 kept
    assertArrayEquals(new long[] {8 * 8, 8}, n.getParam("0_W").shape());
    assertArrayEquals(new long[] {4 * 8, 8}, n.getParam("1_W").shape());
    assertNull(n.paramTable().get("0_M"));
    long expected = 8 * 64 + 64 + 4 * 64 + 16;
    assertEquals(expected, n.numParams());
    n.fit(data(4, 32, 16, 1));
    assertEquals(expected, n.getGradientsViewArray().length());
    assertEquals(2 * expected, n.getUpdater().getStateViewArray().length()); // Adam m, v
    assertEquals(
        2, SparseParams.findPacked(n).get(0).updaterState().size(), "Adam state of kept weights");
  }

  @Test
  void gradientCheckDoublePrecision() {
    MultiLayerNetwork n = net(conf("packed", 16, 24, 8, 0.5, new NoOp(), null));
    DataSet d = data(5, 16, 8, 3);
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig().net(n).input(d.getFeatures()).labels(d.getLabels())));
  }

  @Test
  void sameOutputsGradientsAndTrainingAsTheMaskedLayer() {
    int[] shape = {24, 32, 16};
    MultiLayerNetwork masked = net(conf("masked", 24, 32, 16, 0.5, new Adam(0.02), null));
    MultiLayerNetwork packed = packedTwin(masked, new Adam(0.02), shape);
    DataSet d = data(6, 24, 16, 4);
    assertTrue(masked.output(d.getFeatures()).equalsWithEps(packed.output(d.getFeatures()), 1e-12));
    for (MultiLayerNetwork n : List.of(masked, packed)) {
      n.setInput(d.getFeatures());
      n.setLabels(d.getLabels());
      n.computeGradientAndScore();
    }
    assertEquals(masked.score(), packed.score(), 1e-12);
    for (int i = 0; i < 2; i++) {
      PackedLayout l = SparseParams.findPacked(packed).get(i).layout();
      INDArray maskedGrad = masked.gradient().getGradientFor(i + "_W");
      INDArray packedGrad = packed.gradient().getGradientFor(i + "_W");
      assertTrue(
          PackedSparseParam.pack(maskedGrad, l).equalsWithEps(packedGrad, 1e-12), "dW of " + i);
      assertTrue(
          masked
              .gradient()
              .getGradientFor(i + "_b")
              .equalsWithEps(packed.gradient().getGradientFor(i + "_b"), 1e-12));
    }
    for (int s = 0; s < 3; s++) {
      masked.fit(d);
      packed.fit(d);
    }
    for (int i = 0; i < 2; i++) {
      INDArray dense = SparseParams.findPacked(packed).get(i).denseWeight();
      assertTrue(masked.getParam(i + "_W").equalsWithEps(dense, 1e-10), "W after Adam " + i);
    }
  }

  @Test
  void jsonRoundTripKeepsStorageAndLayout() {
    MultiLayerConfiguration c = conf("packed", 16, 24, 8, 0.5, new Adam(1e-3), null);
    MultiLayerConfiguration back = MultiLayerConfiguration.fromJson(c.toJson());
    assertEquals(c, back);
    assertEquals(c.toJson(), back.toJson());
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    SparseDenseLayer l = (SparseDenseLayer) back.getConf(0).getLayer();
    assertEquals("packed", l.getStorage());
    assertArrayEquals(
        ((SparseDenseLayer) c.getConf(0).getLayer()).getBlockLayout(), l.getBlockLayout());
    assertEquals(3, l.getBlockLayout().length); // 16x24 block8: 6 blocks, half kept
    // masked storage: the old JSON form still reads, default storage masked
    MultiLayerConfiguration m = conf("masked", 16, 24, 8, 0.5, new Adam(1e-3), null);
    assertEquals(m, MultiLayerConfiguration.fromJson(m.toJson()));
    assertEquals("masked", ((SparseDenseLayer) m.getConf(0).getLayer()).getStorage());
  }

  @Test
  void modelFileRoundTripAndSizeFollowsDensity(@TempDir File dir) throws Exception {
    MultiLayerNetwork n = net(conf("packed", 16, 24, 8, 0.5, new Adam(0.01), null));
    DataSet d = data(8, 16, 8, 5);
    n.fit(d);
    File f = new File(dir, "packed.zip");
    ModelSerializer.writeModel(n, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(n.params(), back.params());
    assertEquals(n.getUpdater().getStateViewArray(), back.getUpdater().getStateViewArray());
    assertEquals(n.output(d.getFeatures()), back.output(d.getFeatures()));
    back.fit(d);
    n.fit(d);
    assertEquals(n.params(), back.params());
    // 256 x 256 at 10 % of the block16 blocks: the file follows density
    long packedBytes = fileSize(dir, "p.zip", bigNet("packed"));
    long maskedBytes = fileSize(dir, "m.zip", bigNet("masked"));
    long denseBytes = fileSize(dir, "d.zip", bigDense());
    assertTrue(
        packedBytes < 0.2 * denseBytes,
        "packed " + packedBytes + " B vs dense " + denseBytes + " B");
    assertTrue(packedBytes < maskedBytes, "packed " + packedBytes + " vs masked " + maskedBytes);
  }

  private static long fileSize(File dir, String name, MultiLayerNetwork n) throws Exception {
    n.fit(data(4, 256, 256, 6));
    File f = new File(dir, name);
    ModelSerializer.writeModel(n, f, true);
    return f.length();
  }

  private static MultiLayerNetwork bigNet(String storage) {
    return net(
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .dataType(DataType.FLOAT)
            .updater(new Adam(1e-3))
            .list()
            .layer(
                new SparseDenseLayer.Builder()
                    .nIn(256)
                    .nOut(256)
                    .pattern("block16")
                    .density(0.1)
                    .storage(storage)
                    .build())
            .layer(
                new SparseOutputLayer.Builder()
                    .nIn(256)
                    .nOut(256)
                    .pattern("block16")
                    .density(0.1)
                    .storage(storage)
                    .build())
            .build());
  }

  private static MultiLayerNetwork bigDense() {
    return net(
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .dataType(DataType.FLOAT)
            .updater(new Adam(1e-3))
            .list()
            .layer(new DenseLayer.Builder().nIn(256).nOut(256).build())
            .layer(
                new OutputLayer.Builder().nIn(256).nOut(256).activation(Activation.SOFTMAX).build())
            .build());
  }

  @Test
  void densifyUnpacksTheKeptBlocks() {
    MultiLayerNetwork n = net(conf("packed", 16, 24, 8, 0.5, new Adam(0.01), null));
    DataSet d = data(4, 16, 8, 8);
    n.fit(d);
    MultiLayerNetwork dense = Sparsify.densify(n);
    assertInstanceOf(DenseLayer.class, dense.getLayerWiseConfigurations().getConf(0).getLayer());
    assertEquals(SparseParams.findPacked(n).get(0).denseWeight(), dense.getParam("0_W"));
    assertTrue(n.output(d.getFeatures()).equalsWithEps(dense.output(d.getFeatures()), 1e-12));
  }

  @Test
  void maskToolsAndMstAreRejectedWithAClearError() {
    MultiLayerNetwork n = net(conf("packed", 16, 24, 8, 0.5, new Adam(0.01), null));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparseParams.find(n));
    assertTrue(e.getMessage().contains("'0_W' is stored packed"), e.getMessage());
    assertTrue(e.getMessage().contains("MST"), e.getMessage());
    SparseWeightLayer l = (SparseWeightLayer) n.getLayer(0);
    UnsupportedOperationException u =
        assertThrows(UnsupportedOperationException.class, () -> l.setDenseGradientRequested(true));
    assertTrue(u.getMessage().contains("storage = packed"), u.getMessage());
  }

  @Test
  void badStorageConfigsNameFieldValueAndAllowed() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(16).nOut(16).storage("sparse").build());
    assertTrue(e.getMessage().contains("storage = 'sparse'"), e.getMessage());
    assertTrue(e.getMessage().contains("allowed: masked, packed"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new SparseDenseLayer.Builder()
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
                new SparseOutputLayer.Builder()
                    .nIn(16)
                    .nOut(16)
                    .pattern("block8")
                    .storage("packed")
                    .blockLayout(new int[] {0, 9})
                    .build());
    assertTrue(e.getMessage().contains("blockLayout"), e.getMessage());
    assertTrue(e.getMessage().contains("[0, 4)"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new SparseDenseLayer.Builder()
                    .nOut(16)
                    .pattern("block8")
                    .storage("packed")
                    .build());
    assertTrue(e.getMessage().contains("needs nIn and nOut"), e.getMessage());
  }
}
