package org.sparseflow.layers.sparsify;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.config.DensityDistribution;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.nn.SparseOutputLayer;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;

class SparsifyDl4jTest {

  static MultiLayerConfiguration mlp() {
    return new NeuralNetConfiguration.Builder()
        .seed(3)
        .updater(new Adam(1e-2))
        .list()
        .layer(new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(32).nOut(64).activation(Activation.RELU).build())
        .layer(
            new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                .nIn(64)
                .nOut(8)
                .activation(Activation.SOFTMAX)
                .build())
        .build();
  }

  static DataSet data(long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray x = Nd4j.randn(DataType.FLOAT, 32, 16);
    INDArray y = Nd4j.zeros(DataType.FLOAT, 32, 8);
    for (int i = 0; i < 32; i++) {
      y.putScalar(i, (int) (Math.abs(x.getDouble(i, 0)) * 3) % 8, 1.0);
    }
    return new DataSet(x, y);
  }

  @Test
  void noConfigLeavesModelUnchanged() {
    MultiLayerConfiguration c = mlp();
    var r = Sparsify.apply((SparsityConfig) null, c);
    assertSame(c, r.model());
    assertFalse(r.report().changedAnything());
  }

  @Test
  void configurationDefaultsKeepFirstAndLastDense() {
    SparsityConfig cfg = SparsityConfig.builder().pattern("block8").sparsity(0.75).build();
    var r = Sparsify.apply(cfg, mlp());
    MultiLayerConfiguration out = r.model();
    assertEquals(DenseLayer.class, out.getConf(0).getLayer().getClass());
    assertInstanceOf(SparseDenseLayer.class, out.getConf(1).getLayer());
    assertInstanceOf(SparseDenseLayer.class, out.getConf(2).getLayer());
    assertEquals(OutputLayer.class, out.getConf(3).getLayer().getClass());
    assertEquals(0.25, ((SparseDenseLayer) out.getConf(1).getLayer()).getDensity(), 1e-12);
    assertTrue(r.report().entry("layer0").reason().contains("keepFirstDense"));
    assertTrue(r.report().entry("layer3").reason().contains("keepLastDense"));
    // JSON round trip of the sparse configuration
    assertEquals(out, MultiLayerConfiguration.fromJson(out.toJson()));
    // input untouched
    assertEquals(DenseLayer.class, mlp().getConf(1).getLayer().getClass());
  }

  @Test
  void erkAllocationPreservesGlobalDensity() {
    SparsityConfig cfg =
        SparsityConfig.builder()
            .sparsity(0.8)
            .distribution(DensityDistribution.ERK)
            .keepFirstDense(false)
            .keepLastDense(false)
            .build();
    var r = Sparsify.apply(cfg, mlp());
    assertEquals(0.2, r.report().targetDensityOfSparse(), 1e-9);
    assertInstanceOf(SparseOutputLayer.class, r.model().getConf(3).getLayer());
    // ER favours the smaller layers: 16x32 denser than 32x64
    assertTrue(
        r.report().entry("layer0").targetDensity() > r.report().entry("layer2").targetDensity());
  }

  @Test
  void initialisedNetworkKeepsWeightsMasksByMagnitudeTrainsAndDensifies(@TempDir File dir)
      throws Exception {
    MultiLayerNetwork dense = new MultiLayerNetwork(mlp());
    dense.init();
    for (int i = 0; i < 5; i++) {
      dense.fit(data(i));
    }
    SparsityConfig cfg =
        SparsityConfig.builder().sparsity(0.5).initialMask(InitialMask.MAGNITUDE).build();
    var r = Sparsify.apply(cfg, dense);
    MultiLayerNetwork sparse = r.model();
    INDArray wOld = dense.getParam("1_W"),
        wNew = sparse.getParam("1_W"),
        m = sparse.getParam("1_M");
    assertEquals(0.5, r.report().entry("layer1").measuredDensity(), 0.01);
    // kept weights are the old ones, and they are the largest magnitudes
    assertEquals(wOld.mul(m), wNew);
    double minKept = Double.MAX_VALUE, maxPruned = 0;
    for (long i = 0; i < wOld.length(); i++) {
      double a = Math.abs(wOld.getDouble(i));
      if (m.getDouble(i) != 0) {
        minKept = Math.min(minKept, a);
      } else {
        maxPruned = Math.max(maxPruned, a);
      }
    }
    assertTrue(minKept >= maxPruned, minKept + " < " + maxPruned);
    // dense layers' weights copied unchanged
    assertEquals(dense.getParam("0_W"), sparse.getParam("0_W"));
    // biases carried over although DL4J stores them as [nOut] and the sparse layer as [1, nOut]
    assertEquals(dense.getParam("1_b").ravel(), sparse.getParam("1_b").ravel());
    assertFalse(
        r.report().entry("layer1").reason().contains("fresh"), r.report().entry("layer1").reason());

    double before = sparse.score(data(100));
    for (int i = 0; i < 30; i++) {
      sparse.fit(data(i % 5));
    }
    assertTrue(sparse.score(data(100)) != before);
    INDArray w = sparse.getParam("1_W");
    assertEquals(
        0,
        w.mul(m.rsub(1.0)).neq(0).castTo(DataType.INT32).sumNumber().intValue(),
        "pruned weights moved");

    MultiLayerNetwork plain = Sparsify.densify(sparse);
    for (var c : plain.getLayerWiseConfigurations().getConfs()) {
      assertTrue(
          c.getLayer().getClass().getName().startsWith("org.deeplearning4j"),
          c.getLayer().getClass().getName());
    }
    INDArray x = data(7).getFeatures();
    assertEquals(sparse.output(x), plain.output(x));
    File f = new File(dir, "plain.zip");
    ModelSerializer.writeModel(plain, f, false);
    assertEquals(plain.output(x), MultiLayerNetwork.load(f, false).output(x));
  }

  @Test
  void computationGraphConfigAndNetwork() {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(5)
            .updater(new Adam(1e-2))
            .graphBuilder()
            .addInputs("in")
            .addLayer(
                "fc1",
                new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.RELU).build(),
                "in")
            .addLayer(
                "fc2",
                new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build(),
                "fc1")
            .addLayer(
                "out",
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(8)
                    .activation(Activation.SOFTMAX)
                    .build(),
                "fc2")
            .setOutputs("out")
            .build();
    SparsityConfig cfg =
        SparsityConfig.builder().sparsity(0.75).include("fc.*").keepFirstDense(false).build();
    var rc = Sparsify.apply(cfg, conf);
    assertInstanceOf(
        SparseDenseLayer.class,
        ((LayerVertex) rc.model().getVertices().get("fc1")).getLayerConf().getLayer());
    assertEquals(Status.DENSE, rc.report().entry("out").status());
    assertEquals(rc.model(), ComputationGraphConfiguration.fromJson(rc.model().toJson()));

    ComputationGraph net = new ComputationGraph(conf);
    net.init();
    var rn = Sparsify.apply(cfg, net);
    assertEquals(0.25, rn.report().entry("fc2").measuredDensity(), 0.01);
    INDArray x = data(1).getFeatures();
    assertEquals(rn.model().outputSingle(x), Sparsify.densify(rn.model()).outputSingle(x));
  }

  @Test
  void badInputNamesWhatIsWrong() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Sparsify.apply(SparsityConfig.builder().include("attn_.*").build(), mlp()));
    assertTrue(
        e.getMessage().contains("include[0]")
            && e.getMessage().contains("attn_.*")
            && e.getMessage().contains("0_W"),
        e.getMessage());

    MultiLayerConfiguration odd =
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(new DenseLayer.Builder().nIn(16).nOut(10).build())
            .layer(new DenseLayer.Builder().nIn(10).nOut(10).build())
            .layer(new OutputLayer.Builder().nIn(10).nOut(2).build())
            .build();
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Sparsify.apply(SparsityConfig.builder().pattern("block8").build(), odd));
    assertTrue(
        e.getMessage().contains("'layer1'")
            && e.getMessage().contains("block8")
            && e.getMessage().contains("[10, 10]"),
        e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Sparsify.apply(SparsityConfig.builder().build(), (MultiLayerNetwork) null));
    assertTrue(e.getMessage().contains("model"));
  }
}
