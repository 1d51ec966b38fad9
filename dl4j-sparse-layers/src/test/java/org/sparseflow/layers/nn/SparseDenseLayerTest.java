package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.util.Random;
import java.util.Set;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
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
import org.nd4j.linalg.api.ops.impl.transforms.custom.SoftMax;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;

class SparseDenseLayerTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static INDArray features(long n, long nIn, long seed) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.rand(DataType.DOUBLE, n, nIn).subi(0.5);
  }

  static INDArray oneHot(long n, int classes, long seed) {
    Random r = new Random(seed);
    INDArray l = Nd4j.zeros(DataType.DOUBLE, n, classes);
    for (int i = 0; i < n; i++) {
      l.putScalar(i, r.nextInt(classes), 1.0);
    }
    return l;
  }

  static MultiLayerConfiguration mlnConf(
      String pattern,
      double density,
      int nIn,
      int hidden,
      int nOut,
      IUpdater u,
      double weightDecay) {
    NeuralNetConfiguration.Builder b =
        new NeuralNetConfiguration.Builder().seed(12345).dataType(DataType.DOUBLE).updater(u);
    if (weightDecay > 0) {
      b.weightDecay(weightDecay);
    }
    return b.list()
        .layer(
            new SparseDenseLayer.Builder()
                .nIn(nIn)
                .nOut(hidden)
                .pattern(pattern)
                .density(density)
                .activation(Activation.TANH)
                .build())
        .layer(
            new SparseOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                .nIn(hidden)
                .nOut(nOut)
                .pattern(pattern)
                .density(density)
                .activation(Activation.SOFTMAX)
                .build())
        .build();
  }

  @Test
  void initialMaskHasRequestedDensityAndWeightsAreZeroOutsideIt() {
    MultiLayerNetwork net =
        new MultiLayerNetwork(mlnConf("unstructured", 0.25, 16, 32, 16, new Adam(1e-2), 0));
    net.init();
    INDArray m = net.getParam("0_M"), w = net.getParam("0_W");
    assertEquals(0.25 * 16 * 32, m.sumNumber().doubleValue(), 1e-9);
    assertEquals(0.0, w.mul(m.rsub(1.0)).norm1Number().doubleValue());
    assertTrue(
        w.mul(m).neq(0).castTo(DataType.DOUBLE).sumNumber().doubleValue() > 0.9 * 0.25 * 16 * 32);
    // block pattern: every 8x8 block all kept or all pruned
    MultiLayerNetwork blk =
        new MultiLayerNetwork(mlnConf("block8", 0.5, 16, 32, 16, new Adam(1e-2), 0));
    blk.init();
    INDArray bm = blk.getParam("0_M");
    for (int r = 0; r < 16; r += 8) {
      for (int c = 0; c < 32; c += 8) {
        double s =
            bm.get(NDArrayIndex.interval(r, r + 8), NDArrayIndex.interval(c, c + 8))
                .sumNumber()
                .doubleValue();
        assertTrue(s == 0 || s == 64, "block sum " + s);
      }
    }
    assertEquals(0.5 * 16 * 32, bm.sumNumber().doubleValue(), 1e-9);
    // 2:4: every group of 4 rows of each column keeps 2
    MultiLayerNetwork nm =
        new MultiLayerNetwork(mlnConf("2:4", 0.5, 16, 32, 16, new Adam(1e-2), 0));
    nm.init();
    INDArray nmm = nm.getParam("0_M");
    for (int c = 0; c < 32; c++) {
      for (int g = 0; g < 16; g += 4) {
        assertEquals(
            2.0,
            nmm.get(NDArrayIndex.interval(g, g + 4), NDArrayIndex.point(c))
                .sumNumber()
                .doubleValue());
      }
    }
  }

  @Test
  void gradientCheckMultiLayerNetwork() {
    for (String pattern : new String[] {"unstructured", "block8", "2:4"}) {
      MultiLayerNetwork net = new MultiLayerNetwork(mlnConf(pattern, 0.5, 8, 8, 8, new NoOp(), 0));
      net.init();
      GradientCheckUtil.MLNConfig cfg =
          new GradientCheckUtil.MLNConfig()
              .net(net)
              .input(features(5, 8, 1))
              .labels(oneHot(5, 8, 2))
              .excludeParams(Set.of("0_M", "1_M"));
      if (!pattern.equals("unstructured")) {
        cfg.subset(true).maxPerParam(6); // strided subset of each array
      }
      boolean ok = GradientCheckUtil.checkGradients(cfg);
      assertTrue(ok, "gradient check failed for pattern " + pattern);
    }
  }

  /** Recurrent input: the layer is applied per time step ([B, nIn, T] -> [B, nOut, T]). */
  @Test
  void gradientCheckOnRecurrentInput() {
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(3)
            .dataType(DataType.DOUBLE)
            .updater(new NoOp())
            .list()
            .layer(
                new SparseDenseLayer.Builder()
                    .nOut(6)
                    .density(0.5)
                    .activation(Activation.TANH)
                    .build())
            .layer(
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(2)
                    .build())
            .setInputType(InputType.recurrent(4, 3, RNNFormat.NCW))
            .build();
    MultiLayerNetwork net = new MultiLayerNetwork(c);
    net.init();
    Nd4j.getRandom().setSeed(4);
    INDArray x = Nd4j.rand(DataType.DOUBLE, 2, 4, 3), y = Nd4j.rand(DataType.DOUBLE, 2, 2, 3);
    INDArray out = net.feedForward(x).get(1);
    assertArrayEquals(new long[] {2, 6, 3}, out.shape());
    // time step 1 equals the layer applied to that step alone
    INDArray x1 = x.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(1));
    INDArray ref =
        Nd4j.math()
            .tanh(
                x1.mmul(net.getParam("0_W").mul(net.getParam("0_M")))
                    .addRowVector(net.getParam("0_b")));
    assertTrue(
        ref.equalsWithEps(
            out.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(1)), 1e-12));
    assertTrue(
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig()
                .net(net)
                .input(x)
                .labels(y)
                .excludeParams(Set.of("0_M"))));
  }

  @Test
  void gradientCheckComputationGraph() {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(7)
            .dataType(DataType.DOUBLE)
            .updater(new NoOp())
            .graphBuilder()
            .addInputs("in")
            .addLayer(
                "h",
                new SparseDenseLayer.Builder()
                    .nIn(6)
                    .nOut(10)
                    .density(0.4)
                    .activation(Activation.SIGMOID)
                    .build(),
                "in")
            .addLayer(
                "out",
                new SparseOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .nIn(10)
                    .nOut(3)
                    .density(0.6)
                    .activation(Activation.IDENTITY)
                    .build(),
                "h")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(conf);
    g.init();
    boolean ok =
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.GraphConfig()
                .net(g)
                .inputs(new INDArray[] {features(4, 6, 3)})
                .labels(new INDArray[] {features(4, 3, 4)})
                .excludeParams(Set.of("h_M", "out_M")));
    assertTrue(ok);
  }

  @Test
  void equalsDenseReferenceWithMaskedWeights() {
    MultiLayerNetwork net =
        new MultiLayerNetwork(mlnConf("unstructured", 0.3, 8, 12, 5, new NoOp(), 0));
    net.init();
    INDArray x = features(7, 8, 5);
    INDArray h =
        Nd4j.math()
            .tanh(
                x.mmul(net.getParam("0_W").mul(net.getParam("0_M")))
                    .addRowVector(net.getParam("0_b")));
    INDArray z =
        h.mmul(net.getParam("1_W").mul(net.getParam("1_M"))).addRowVector(net.getParam("1_b"));
    INDArray expected = Nd4j.exec(new SoftMax(z))[0];
    assertTrue(expected.equalsWithEps(net.output(x), 1e-12));
  }

  @Test
  void prunedWeightsStayExactlyZeroUnderAdamWeightDecayAndNesterovs() {
    IUpdater[] updaters = {new Adam(0.01), new Adam(0.01), new Nesterovs(0.02, 0.9)};
    double[] decay = {0, 1e-2, 1e-2};
    for (int u = 0; u < updaters.length; u++) {
      MultiLayerNetwork net =
          new MultiLayerNetwork(mlnConf("unstructured", 0.3, 8, 16, 4, updaters[u], decay[u]));
      net.init();
      INDArray m0 = net.getParam("0_M").dup(), w0 = net.getParam("0_W").dup();
      DataSet ds = new DataSet(features(32, 8, 9), oneHot(32, 4, 10));
      double before = net.score(ds);
      for (int i = 0; i < 15; i++) {
        net.fit(ds);
        for (String l : new String[] {"0", "1"}) {
          INDArray w = net.getParam(l + "_W"), m = net.getParam(l + "_M");
          assertEquals(
              0.0,
              w.mul(m.rsub(1.0)).norm1Number().doubleValue(),
              "pruned weights moved, layer " + l);
        }
      }
      assertEquals(m0, net.getParam("0_M"), "mask changed during training");
      assertTrue(
          net.score(ds) < before,
          "updater " + u + ": loss did not fall: " + before + " -> " + net.score(ds));
      assertTrue(
          w0.sub(net.getParam("0_W")).mul(m0).norm1Number().doubleValue() > 0,
          "kept weights did not train");
    }
  }

  @Test
  void dropoutIsAppliedInTrainingOnly() {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(5)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(1e-2))
                .list()
                .layer(
                    new SparseDenseLayer.Builder()
                        .nIn(8)
                        .nOut(16)
                        .density(0.5)
                        .dropOut(0.5)
                        .activation(Activation.RELU)
                        .build())
                .layer(
                    new SparseOutputLayer.Builder()
                        .nIn(16)
                        .nOut(4)
                        .density(0.5)
                        .dropOut(0.8)
                        .build())
                .build());
    net.init();
    INDArray x = features(6, 8, 3);
    assertEquals(net.output(x, false), net.output(x, false));
    assertNotEquals(net.output(x, true), net.output(x, true));
    DataSet ds = new DataSet(x, oneHot(6, 4, 4));
    for (int i = 0; i < 3; i++) {
      net.fit(ds);
    }
    assertEquals(
        0.0, net.getParam("0_W").mul(net.getParam("0_M").rsub(1.0)).norm1Number().doubleValue());
  }

  @Test
  void jsonAndYamlRoundTrip() {
    MultiLayerConfiguration c = mlnConf("block8", 0.25, 16, 32, 8, new Adam(1e-3), 1e-4);
    assertEquals(c, MultiLayerConfiguration.fromJson(c.toJson()));
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    assertEquals(c.toJson(), MultiLayerConfiguration.fromJson(c.toJson()).toJson());
    SparseDenseLayer l =
        (SparseDenseLayer) MultiLayerConfiguration.fromJson(c.toJson()).getConf(0).getLayer();
    assertEquals("block8", l.getPattern());
    assertEquals(0.25, l.getDensity());
    MultiLayerConfiguration c2 = mlnConf("2:4", 0.5, 8, 8, 8, new Adam(1e-3), 0);
    assertEquals(c2, MultiLayerConfiguration.fromJson(c2.toJson()));
    assertNotEquals(c, c2);
    ComputationGraphConfiguration g =
        new NeuralNetConfiguration.Builder()
            .graphBuilder()
            .addInputs("in")
            .addLayer(
                "h",
                new SparseDenseLayer.Builder().nIn(6).nOut(10).density(0.4).hasBias(false).build(),
                "in")
            .addLayer(
                "out",
                new SparseOutputLayer.Builder()
                    .nIn(10)
                    .nOut(3)
                    .pattern("unstructured")
                    .density(0.6)
                    .build(),
                "h")
            .setOutputs("out")
            .build();
    assertEquals(g, ComputationGraphConfiguration.fromJson(g.toJson()));
    assertEquals(g, ComputationGraphConfiguration.fromYaml(g.toYaml()));
  }

  @Test
  void saveLoadKeepsMasksAndOutputs(@TempDir File dir) throws Exception {
    MultiLayerNetwork net =
        new MultiLayerNetwork(mlnConf("unstructured", 0.3, 8, 16, 4, new Adam(0.05), 0));
    net.init();
    DataSet ds = new DataSet(features(16, 8, 9), oneHot(16, 4, 10));
    for (int i = 0; i < 3; i++) {
      net.fit(ds);
    }
    File f = new File(dir, "net.zip");
    ModelSerializer.writeModel(net, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(net.getParam("0_M"), back.getParam("0_M"));
    assertEquals(net.params(), back.params());
    assertEquals(net.output(ds.getFeatures()), back.output(ds.getFeatures()));
    assertEquals(net.getUpdater().getStateViewArray(), back.getUpdater().getStateViewArray());
    back.fit(ds);
    assertEquals(
        0.0, back.getParam("0_W").mul(back.getParam("0_M").rsub(1.0)).norm1Number().doubleValue());
  }

  @Test
  void badConfigsNameFieldValueAndAllowed() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(4).nOut(4).density(0.0).build());
    assertTrue(
        e.getMessage().contains("density")
            && e.getMessage().contains("0.0")
            && e.getMessage().contains("(0, 1]"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(4).nOut(4).density(1.5).build());
    assertTrue(
        e.getMessage().contains("density") && e.getMessage().contains("1.5"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseOutputLayer.Builder().nIn(4).nOut(4).pattern("diagonal").build());
    assertTrue(
        e.getMessage().contains("pattern")
            && e.getMessage().contains("diagonal")
            && e.getMessage().contains("block16"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(12).nOut(16).pattern("block8").build());
    assertTrue(
        e.getMessage().contains("nIn")
            && e.getMessage().contains("12")
            && e.getMessage().contains("multiples of 8"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(16).nOut(20).pattern("block8").build());
    assertTrue(e.getMessage().contains("nOut") && e.getMessage().contains("20"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new SparseDenseLayer.Builder().nIn(6).nOut(8).pattern("2:4").build());
    assertTrue(e.getMessage().contains("nIn") && e.getMessage().contains("6"), e.getMessage());
    // nIn only known after setInputType: checked when the network is initialised
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(new SparseDenseLayer.Builder().nOut(16).pattern("block8").build())
            .layer(new SparseOutputLayer.Builder().nOut(2).activation(Activation.SOFTMAX).build())
            .setInputType(InputType.feedForward(12))
            .build();
    e = assertThrows(IllegalArgumentException.class, () -> new MultiLayerNetwork(c).init());
    assertTrue(e.getMessage().contains("nIn") && e.getMessage().contains("12"), e.getMessage());
  }
}
