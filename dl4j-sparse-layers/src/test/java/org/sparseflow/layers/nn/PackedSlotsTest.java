package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.layers.nn.PackedStorageTest.conf;
import static org.sparseflow.layers.nn.PackedStorageTest.data;
import static org.sparseflow.layers.nn.PackedStorageTest.net;

import java.io.File;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.deeplearning4j.nn.graph.ComputationGraph;
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
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.PackedModels;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * Packed weights with spare block slots, changed in place ({@link PackedSparseParam#relayout}) and
 * resized by a rebuild ({@link PackedModels#withSlots}): what MST on DL4J packed layers stands on.
 */
class PackedSlotsTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  /** 16x24 block8 hidden layer (6 blocks, 3 kept) with {@code slots} slots; packed output. */
  private static MultiLayerNetwork withSlots(int slots) {
    MultiLayerConfiguration c = conf("packed", 16, 24, 8, 0.5, new Adam(0.02), null);
    ((SparseDenseLayer) c.getConf(0).getLayer()).setBlockCapacity(slots);
    return net(c);
  }

  @Test
  void spareSlotsAreZeroAndChangeNothing() {
    MultiLayerNetwork exact = net(conf("packed", 16, 24, 8, 0.5, new Adam(0.02), null));
    MultiLayerNetwork spare = withSlots(5);
    assertArrayEquals(new long[] {5 * 8, 8}, spare.getParam("0_W").shape());
    PackedSparseParam p = SparseParams.findPacked(spare).get(0);
    assertEquals(5, p.slots());
    assertEquals(3, p.layout().keptBlocks());
    assertEquals(
        0.0, PackedBlockLinear.blocks(p.packedValues(), 3, 2, 8).sumNumber().doubleValue());
    p.keptValues().assign(SparseParams.findPacked(exact).get(0).packedValues());
    for (String k : List.of("0_b", "1_W", "1_b")) {
      spare.setParam(k, exact.getParam(k));
    }
    DataSet d = data(6, 16, 8, 5);
    assertTrue(exact.output(d.getFeatures()).equalsWithEps(spare.output(d.getFeatures()), 1e-12));
    for (int s = 0; s < 3; s++) {
      exact.fit(d);
      spare.fit(d);
    }
    assertEquals(exact.score(), spare.score(), 1e-12);
    assertTrue(
        SparseParams.findPacked(exact).get(0).denseWeight().equalsWithEps(p.denseWeight(), 1e-12));
    assertEquals(
        0.0,
        PackedBlockLinear.blocks(p.packedValues(), 3, 2, 8).sumNumber().doubleValue(),
        "spare slots stay zero under Adam");
  }

  @Test
  void gradientCheckWithSpareSlots() {
    MultiLayerConfiguration c = conf("packed", 16, 24, 8, 0.5, new NoOp(), null);
    ((SparseDenseLayer) c.getConf(0).getLayer()).setBlockCapacity(6);
    MultiLayerNetwork n = net(c);
    DataSet d = data(5, 16, 8, 3);
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig().net(n).input(d.getFeatures()).labels(d.getLabels())));
  }

  @Test
  void relayoutKeepsSharedBlocksAndZeroesNewOnesWithTheirAdamState() {
    MultiLayerNetwork n = withSlots(5);
    DataSet d = data(6, 16, 8, 5);
    n.fit(d);
    n.fit(d);
    PackedSparseParam p = SparseParams.findPacked(n).get(0);
    PackedLayout from = p.layout();
    INDArray denseBefore = p.denseWeight();
    List<INDArray> stateBefore = dup(p.updaterState());
    int[] kept = from.keptRowMajor();
    int fresh = firstNotIn(kept, 6);
    int[] next = {kept[0], kept[2], fresh, firstNotIn(new int[] {kept[0], kept[2], fresh}, 6)};
    java.util.Arrays.sort(next);
    PackedLayout to = PackedLayout.of(16, 24, 8, next);
    p.relayout(to);
    assertEquals(to, p.layout());
    assertArrayEquals(
        next,
        ((SparseDenseLayer) n.getLayerWiseConfigurations().getConf(0).getLayer()).getBlockLayout());
    INDArray dense = p.denseWeight();
    for (int u = 0; u < 6; u++) {
      INDArray blockNow = block(dense, u);
      if (u == kept[0] || u == kept[2]) {
        assertEquals(block(denseBefore, u), blockNow, "kept block " + u);
      } else {
        assertEquals(0.0, blockNow.norm2Number().doubleValue(), "block " + u);
      }
    }
    List<INDArray> state = p.updaterState();
    assertEquals(2, state.size());
    for (int k = 0; k < 2; k++) {
      INDArray was = PackedBlockLinear.unpack(leading(stateBefore.get(k), from), from);
      INDArray now = PackedBlockLinear.unpack(leading(state.get(k), to), to);
      for (int u = 0; u < 6; u++) {
        boolean shared = u == kept[0] || u == kept[2];
        assertEquals(
            shared ? block(was, u) : block(was, u).mul(0), block(now, u), "state " + k + " " + u);
      }
    }
    n.fit(d); // trains on the new layout
    assertTrue(Double.isFinite(n.score()));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> p.relayout(PackedLayout.of(16, 24, 8, new int[] {0, 1, 2, 3, 4, 5})));
    assertTrue(e.getMessage().contains("at most 5 blocks"), e.getMessage());
    assertEquals(to, p.layout(), "a refused relayout changes nothing");
  }

  @Test
  void densifyUnpacksTheKeptBlocksOfAWeightWithSpareSlots() {
    MultiLayerNetwork n = withSlots(5);
    n.fit(data(6, 16, 8, 3));
    MultiLayerNetwork dense = Sparsify.densify(n);
    assertEquals(SparseParams.findPacked(n).get(0).denseWeight(), dense.getParam("0_W"));
    DataSet d = data(4, 16, 8, 8);
    assertTrue(n.output(d.getFeatures()).equalsWithEps(dense.output(d.getFeatures()), 1e-12));
  }

  @Test
  void relayoutToFewerBlocksKeepsTheSlotsOfALayerWithoutACapacity() {
    MultiLayerNetwork n = net(conf("packed", 16, 24, 8, 0.5, new Adam(0.02), null));
    PackedSparseParam p = SparseParams.findPacked(n).get(0);
    assertEquals(3, p.slots());
    int[] kept = p.layout().keptRowMajor();
    p.relayout(PackedLayout.of(16, 24, 8, new int[] {kept[0], kept[1]}));
    assertEquals(3, p.slots(), "the param keeps its 3 slots");
    assertEquals(
        3,
        ((SparseDenseLayer) n.getLayerWiseConfigurations().getConf(0).getLayer())
            .getBlockCapacity());
    n.fit(data(6, 16, 8, 1));
    assertTrue(Double.isFinite(n.score()));
  }

  @Test
  void withSlotsCopiesParamsStateAndCountsAndTrainsOnIdentically(@TempDir File dir)
      throws Exception {
    MultiLayerNetwork a = withSlots(3);
    MultiLayerNetwork b = withSlots(3);
    b.setParams(a.params());
    DataSet d = data(6, 16, 8, 9);
    for (int s = 0; s < 2; s++) {
      a.fit(d);
      b.fit(d);
    }
    MultiLayerNetwork big = (MultiLayerNetwork) PackedModels.withSlots(b, Map.of("0_W", 6));
    assertNotSame(b, big);
    assertEquals(3, SparseParams.findPacked(b).get(0).slots(), "the given model is unchanged");
    assertEquals(6, SparseParams.findPacked(big).get(0).slots());
    assertEquals(b.getIterationCount(), big.getIterationCount());
    assertEquals(b.getEpochCount(), big.getEpochCount());
    for (int s = 0; s < 3; s++) {
      a.fit(d);
      big.fit(d);
      assertEquals(a.score(), big.score(), 1e-12, "step " + s);
    }
    MultiLayerNetwork small = (MultiLayerNetwork) PackedModels.withSlots(big, Map.of("0_W", 3));
    assertEquals(a.numParams(), small.numParams());
    assertTrue(a.params().equalsWithEps(small.params(), 1e-12));
    assertTrue(
        a.getUpdater()
            .getStateViewArray()
            .equalsWithEps(small.getUpdater().getStateViewArray(), 1e-12));
    File f = new File(dir, "big.zip");
    ModelSerializer.writeModel(big, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(big.getLayerWiseConfigurations(), back.getLayerWiseConfigurations());
    assertEquals(6, SparseParams.findPacked(back).get(0).slots());
    assertEquals(big.params(), back.params());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedModels.withSlots(big, Map.of("0_W", 2)));
    assertTrue(e.getMessage().contains("blockCapacity = 2"), e.getMessage());
    assertTrue(e.getMessage().contains("3..6"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedModels.withSlots(big, Map.of("0_b", 4)));
    assertTrue(e.getMessage().contains("'0_b'"), e.getMessage());
  }

  /** in [2, 16, 6] -> TimeDistributed(packed SparseDenseLayer 16 -> 24) -> RNN output 3. */
  private static ComputationGraph wrappedGraph() {
    ComputationGraph g =
        new ComputationGraph(
            new NeuralNetConfiguration.Builder()
                .seed(5)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(0.02))
                .graphBuilder()
                .addInputs("in")
                .addLayer(
                    "mlp",
                    new TimeDistributed(
                        new SparseDenseLayer.Builder()
                            .nIn(16)
                            .nOut(24)
                            .pattern("block8")
                            .density(0.5)
                            .storage("packed")
                            .activation(Activation.TANH)
                            .build(),
                        RNNFormat.NCW),
                    "in")
                .addLayer(
                    "out",
                    new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                        .nIn(24)
                        .nOut(3)
                        .activation(Activation.IDENTITY)
                        .dataFormat(RNNFormat.NCW)
                        .build(),
                    "mlp")
                .setOutputs("out")
                .build());
    g.init();
    return g;
  }

  @Test
  void withSlotsRebuildsAGraphThroughAWrapperAndTrainsOnIdentically() {
    ComputationGraph a = wrappedGraph();
    ComputationGraph b = wrappedGraph();
    Nd4j.getRandom().setSeed(4);
    org.nd4j.linalg.dataset.DataSet d =
        new org.nd4j.linalg.dataset.DataSet(
            Nd4j.rand(DataType.DOUBLE, 2, 16, 6), Nd4j.rand(DataType.DOUBLE, 2, 3, 6));
    a.fit(d);
    b.fit(d);
    List<PackedSparseParam> p = SparseParams.findPacked(b);
    assertEquals(List.of("mlp_W"), p.stream().map(PackedSparseParam::name).toList());
    ComputationGraph big = (ComputationGraph) PackedModels.withSlots(b, Map.of("mlp_W", 6));
    assertEquals(6, SparseParams.findPacked(big).get(0).slots());
    assertTrue(
        a.outputSingle(d.getFeatures()).equalsWithEps(big.outputSingle(d.getFeatures()), 1e-12));
    for (int s = 0; s < 3; s++) {
      a.fit(d);
      big.fit(d);
      assertEquals(a.score(), big.score(), 1e-12, "step " + s + ": Adam state carried over");
    }
  }

  @Test
  void jsonRoundTripKeepsTheCapacityAndBadCapacitiesAreRefused() {
    MultiLayerConfiguration c = conf("packed", 16, 24, 8, 0.5, new Adam(1e-3), null);
    ((SparseDenseLayer) c.getConf(0).getLayer()).setBlockCapacity(4);
    MultiLayerConfiguration back = MultiLayerConfiguration.fromJson(c.toJson());
    assertEquals(c, back);
    assertEquals(4, ((SparseDenseLayer) back.getConf(0).getLayer()).getBlockCapacity());
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    for (int bad : new int[] {2, 7}) {
      MultiLayerConfiguration x = conf("packed", 16, 24, 8, 0.5, new Adam(1e-3), null);
      ((SparseDenseLayer) x.getConf(0).getLayer()).setBlockCapacity(bad);
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> new MultiLayerNetwork(x).init());
      assertTrue(e.getMessage().contains("blockCapacity = " + bad), e.getMessage());
      assertTrue(e.getMessage().contains("allowed: 0 (exactly the kept blocks) or 3..6"));
    }
    MultiLayerConfiguration m = conf("masked", 16, 24, 8, 0.5, new Adam(1e-3), null);
    ((SparseDenseLayer) m.getConf(0).getLayer()).setBlockCapacity(4);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new MultiLayerNetwork(m).init());
    assertTrue(e.getMessage().contains("storage = masked"), e.getMessage());
  }

  @Test
  void growthScoresAreTheDenseGradientsBlockNorms() {
    MultiLayerNetwork packed = withSlots(4);
    PackedSparseParam p = SparseParams.findPacked(packed).get(0);
    double[] sq = new double[6];
    p.setGrowthScores(sq);
    DataSet d = data(6, 16, 8, 2);
    packed.setInput(d.getFeatures());
    packed.setLabels(d.getLabels());
    packed.computeGradientAndScore();
    // a masked twin keeping every block, zeros where the packed layers keep none: same outputs, and
    // its gradient of 0_W is the packed net's dense gradient
    MultiLayerNetwork dense = net(conf("masked", 16, 24, 8, 1.0, new NoOp(), null));
    dense.setParam("0_W", p.denseWeight());
    dense.setParam("0_b", packed.getParam("0_b"));
    dense.setParam("1_W", SparseParams.findPacked(packed).get(1).denseWeight());
    dense.setParam("1_b", packed.getParam("1_b"));
    dense.setInput(d.getFeatures());
    dense.setLabels(d.getLabels());
    dense.computeGradientAndScore();
    assertEquals(packed.score(), dense.score(), 1e-12);
    INDArray g = dense.gradient().getGradientFor("0_W");
    int nonZero = 0;
    for (int u = 0; u < 6; u++) {
      double n2 = block(g, u).norm2Number().doubleValue();
      assertEquals(n2 * n2, sq[u], 1e-9 * (1 + n2 * n2), "block " + u);
      nonZero += n2 > 0 ? 1 : 0;
    }
    // hidden units the output layer keeps no block for get no gradient; the others do
    assertTrue(nonZero >= 2, "blocks with a gradient: " + nonZero);
    p.setGrowthScores(null);
    double[] before = sq.clone();
    packed.computeGradientAndScore();
    assertArrayEquals(before, sq, "off: no more sums");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> p.setGrowthScores(new double[5]));
    assertTrue(e.getMessage().contains("allowed: 6"), e.getMessage());
  }

  private static INDArray block(INDArray dense, int unit) {
    int cols = (int) dense.size(1) / 8;
    int r = unit / cols;
    int c = unit % cols;
    return dense.get(
        org.nd4j.linalg.indexing.NDArrayIndex.interval(r * 8, r * 8 + 8),
        org.nd4j.linalg.indexing.NDArrayIndex.interval(c * 8, c * 8 + 8));
  }

  private static INDArray leading(INDArray packed, PackedLayout l) {
    return PackedBlockLinear.leadingBlocks(packed, l.keptBlocks(), l.blockSize());
  }

  private static List<INDArray> dup(List<INDArray> l) {
    return l.stream().map(INDArray::dup).toList();
  }

  private static int firstNotIn(int[] a, int n) {
    for (int u = 0; u < n; u++) {
      final int v = u;
      if (java.util.Arrays.stream(a).noneMatch(x -> x == v)) {
        return u;
      }
    }
    throw new IllegalStateException();
  }
}
