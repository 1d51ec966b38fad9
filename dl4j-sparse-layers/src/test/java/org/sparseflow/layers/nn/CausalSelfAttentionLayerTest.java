package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.util.HashSet;
import java.util.Set;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.graph.ElementWiseVertex;
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
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.ops.attention.BlockLayout;

class CausalSelfAttentionLayerTest {

  /** One pattern per kind plus a union; T = 8, blockSize = 2. */
  static final String[] PATTERNS = {
    "dense", "local:3", "strided:3", "fixed:4:1", "global:2", "random:1:seed=5", "local:2+strided:4"
  };

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static MultiLayerNetwork net(
      String pattern,
      int nIn,
      int nOut,
      int heads,
      int block,
      int t,
      String projPattern,
      IUpdater updater) {
    CausalSelfAttentionLayer.Builder ab =
        new CausalSelfAttentionLayer.Builder()
            .nOut(nOut)
            .nHeads(heads)
            .attentionPattern(pattern)
            .blockSize(block);
    if (projPattern != null) {
      ab.projectionPattern(projPattern).projectionDensity(0.5);
    }
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(42)
            .dataType(DataType.DOUBLE)
            .updater(updater)
            .list()
            .layer(ab.build())
            .layer(
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(3)
                    .dataFormat(RNNFormat.NCW)
                    .build())
            .setInputType(InputType.recurrent(nIn, t, RNNFormat.NCW))
            .build();
    MultiLayerNetwork n = new MultiLayerNetwork(c);
    n.init();
    return n;
  }

  static INDArray input(long b, long nIn, long t, long seed) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.rand(DataType.DOUBLE, b, nIn, t).subi(0.5).muli(2);
  }

  /**
   * Hand-written attention: per example and head, softmax(q k^T / sqrt(d) + mask) v with
   * keep[h][i][j] (null: dense causal j <= i), then the output projection.
   */
  static INDArray reference(MultiLayerNetwork n, INDArray x, int heads, boolean[][][] keep) {
    long b = x.size(0), t = x.size(2), nOut = n.getParam("0_Wo").size(0), d = nOut / heads;
    INDArray out = Nd4j.create(DataType.DOUBLE, b, nOut, t);
    for (int e = 0; e < b; e++) {
      INDArray xe =
          x.get(NDArrayIndex.point(e), NDArrayIndex.all(), NDArrayIndex.all())
              .transpose(); // [T, nIn]
      INDArray q = xe.mmul(n.getParam("0_Wq")).addRowVector(n.getParam("0_bq"));
      INDArray k = xe.mmul(n.getParam("0_Wk")).addRowVector(n.getParam("0_bk"));
      INDArray v = xe.mmul(n.getParam("0_Wv")).addRowVector(n.getParam("0_bv"));
      INDArray o = Nd4j.create(DataType.DOUBLE, t, nOut);
      for (int h = 0; h < heads; h++) {
        INDArray qh = q.get(NDArrayIndex.all(), NDArrayIndex.interval(h * d, (h + 1) * d));
        INDArray kh = k.get(NDArrayIndex.all(), NDArrayIndex.interval(h * d, (h + 1) * d));
        INDArray vh = v.get(NDArrayIndex.all(), NDArrayIndex.interval(h * d, (h + 1) * d));
        INDArray s = qh.mmul(kh.transpose()).muli(1.0 / Math.sqrt(d));
        double[][] p = new double[(int) t][(int) t];
        for (int i = 0; i < t; i++) {
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j <= i; j++) {
            if (keep == null || keep[h][i][j]) {
              max = Math.max(max, s.getDouble(i, j));
            }
          }
          double sum = 0;
          for (int j = 0; j <= i; j++) {
            if (keep == null || keep[h][i][j]) {
              p[i][j] = Math.exp(s.getDouble(i, j) - max);
              sum += p[i][j];
            }
          }
          for (int j = 0; j <= i; j++) {
            p[i][j] /= sum;
          }
        }
        o.get(NDArrayIndex.all(), NDArrayIndex.interval(h * d, (h + 1) * d))
            .assign(Nd4j.create(p).mmul(vh));
      }
      INDArray y = o.mmul(n.getParam("0_Wo")).addRowVector(n.getParam("0_bo")); // [T, nOut]
      out.get(NDArrayIndex.point(e), NDArrayIndex.all(), NDArrayIndex.all()).assign(y.transpose());
    }
    return out;
  }

  static boolean[][][] keepOf(BlockLayout l, int heads, int t) {
    boolean[][][] k = new boolean[heads][t][t];
    for (int h = 0; h < heads; h++) {
      for (int i = 0; i < t; i++) {
        for (int j = 0; j < t; j++) {
          k[h][i][j] = l.isKept(h, i, j);
        }
      }
    }
    return k;
  }

  @Test
  void denseEqualsHandWrittenCausalAttention() {
    MultiLayerNetwork n = net("dense", 6, 8, 2, 4, 8, null, new NoOp());
    INDArray x = input(3, 6, 8, 1);
    INDArray got = n.feedForward(x).get(1);
    INDArray expected = reference(n, x, 2, null);
    assertArrayEquals(expected.shape(), got.shape());
    assertTrue(expected.equalsWithEps(got, 1e-10), "max diff " + expected.sub(got).amaxNumber());
    // a sequence length that no block size divides still works for the dense pattern
    INDArray x7 = input(2, 6, 7, 2);
    assertTrue(reference(n, x7, 2, null).equalsWithEps(n.feedForward(x7).get(1), 1e-10));
  }

  @Test
  void everyPatternEqualsMaskedReferenceAndIsCausal() {
    for (String p : PATTERNS) {
      MultiLayerNetwork n = net(p, 4, 8, 2, 2, 8, null, new NoOp());
      INDArray x = input(2, 4, 8, 3);
      CausalSelfAttentionLayerImpl impl = (CausalSelfAttentionLayerImpl) n.getLayer(0);
      boolean[][][] keep = keepOf(impl.layout(8), 2, 8);
      INDArray got = n.feedForward(x).get(1);
      assertTrue(reference(n, x, 2, keep).equalsWithEps(got, 1e-10), "pattern " + p);
      // causality: changing the last token leaves every earlier position unchanged
      INDArray x2 = x.dup();
      x2.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(7)).addi(1.0);
      INDArray got2 = n.feedForward(x2).get(1);
      assertEquals(
          got.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.interval(0, 7)),
          got2.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.interval(0, 7)),
          "pattern " + p);
      assertNotEquals(
          got.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(7)),
          got2.get(NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.point(7)));
    }
  }

  /**
   * Every parameter for a union pattern; for each single-kind pattern a strided subset of each
   * parameter array (the machine is small: every perturbation is a full forward pass).
   */
  @Test
  void gradientCheckEveryPattern() {
    for (String p : PATTERNS) {
      boolean full = p.contains("+");
      MultiLayerNetwork n = net(p, 4, 4, 2, 2, 8, null, new NoOp());
      GradientCheckUtil.MLNConfig cfg =
          new GradientCheckUtil.MLNConfig()
              .net(n)
              .input(input(2, 4, 8, 5))
              .labels(input(2, 3, 8, 6));
      if (!full) {
        cfg.subset(true).maxPerParam(2);
      }
      assertTrue(
          GradientCheckUtil.checkGradients(cfg),
          "gradient check failed for attention pattern " + p);
    }
  }

  @Test
  void gradientCheckSparseProjections() {
    MultiLayerNetwork n = net("local:2+strided:4", 4, 4, 2, 2, 4, "unstructured", new NoOp());
    assertEquals(0.5 * 16, n.getParam("0_Mq").sumNumber().doubleValue(), 1e-9);
    Set<String> exclude = new HashSet<>();
    for (String p : CausalSelfAttentionLayer.PROJ) {
      exclude.add("0_M" + p);
    }
    boolean ok =
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.MLNConfig()
                .net(n)
                .input(input(2, 4, 4, 7))
                .labels(input(2, 3, 4, 8))
                .excludeParams(exclude)
                .subset(true)
                .maxPerParam(6));
    assertTrue(ok);
  }

  /**
   * Pre-LN residual attention block in a ComputationGraph (small: the graph check perturbs every
   * parameter).
   */
  @Test
  void gradientCheckComputationGraphWithLayerNorm() {
    ComputationGraphConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(3)
            .dataType(DataType.DOUBLE)
            .updater(new NoOp())
            .graphBuilder()
            .addInputs("in")
            .setInputTypes(InputType.recurrent(2, 4, RNNFormat.NCW))
            .addLayer("ln", new LayerNormLayer.Builder().build(), "in")
            .addLayer(
                "attn",
                new CausalSelfAttentionLayer.Builder()
                    .nOut(2)
                    .nHeads(1)
                    .attentionPattern("local:2")
                    .blockSize(2)
                    .build(),
                "ln")
            .addVertex("res", new ElementWiseVertex(ElementWiseVertex.Op.Add), "in", "attn")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(1)
                    .dataFormat(RNNFormat.NCW)
                    .build(),
                "res")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(c);
    g.init();
    // non-trivial layer-norm gain and bias
    g.getParam("ln_g").assign(Nd4j.create(new double[][] {{0.7, 1.6}}));
    g.getParam("ln_b").assign(Nd4j.create(new double[][] {{0.2, -0.3}}));
    boolean ok =
        GradientCheckUtil.checkGradients(
            new GradientCheckUtil.GraphConfig()
                .net(g)
                .inputs(new INDArray[] {input(2, 2, 4, 9)})
                .labels(new INDArray[] {input(2, 1, 4, 10)}));
    assertTrue(ok);
  }

  @Test
  void trainsAndSavesWithSparseProjections(@TempDir File dir) throws Exception {
    MultiLayerNetwork n = net("local:2+strided:2", 8, 8, 2, 2, 4, "unstructured", new Adam(0.01));
    DataSet ds = new DataSet(input(4, 8, 4, 11), input(4, 3, 4, 12));
    double before = n.score(ds);
    for (int i = 0; i < 20; i++) {
      n.fit(ds);
    }
    assertTrue(n.score(ds) < before);
    for (String p : CausalSelfAttentionLayer.PROJ) {
      assertEquals(
          0.0,
          n.getParam("0_W" + p).mul(n.getParam("0_M" + p).rsub(1.0)).norm1Number().doubleValue(),
          p);
    }
    File f = new File(dir, "attn.zip");
    ModelSerializer.writeModel(n, f, true);
    MultiLayerNetwork back = ModelSerializer.restoreMultiLayerNetwork(f, true);
    assertEquals(n.params(), back.params());
    assertEquals(n.output(ds.getFeatures()), back.output(ds.getFeatures()));
    assertEquals(n.getParam("0_Mv"), back.getParam("0_Mv"));
  }

  /**
   * The samediff-ops block-sparse kernel against the ND4J masked-dense path, for every pattern,
   * forward and gradients.
   */
  @Test
  void kernelEqualsMaskedDensePath() {
    String old = System.getProperty("sparseflow.attention");
    try {
      for (String p : PATTERNS) {
        MultiLayerNetwork n = net(p, 4, 8, 2, 2, 8, null, new NoOp());
        DataSet ds = new DataSet(input(2, 4, 8, 13), input(2, 3, 8, 14));
        System.setProperty("sparseflow.attention", "dense");
        INDArray outDense = n.output(ds.getFeatures());
        n.setInput(ds.getFeatures());
        n.setLabels(ds.getLabels());
        n.computeGradientAndScore();
        INDArray gDense = n.gradient().gradient().dup();
        System.setProperty("sparseflow.attention", "kernel");
        assertTrue(outDense.equalsWithEps(n.output(ds.getFeatures()), 1e-10), p);
        n.computeGradientAndScore();
        assertTrue(gDense.equalsWithEps(n.gradient().gradient(), 1e-10), p);
      }
    } finally {
      if (old == null) {
        System.clearProperty("sparseflow.attention");
      } else {
        System.setProperty("sparseflow.attention", old);
      }
    }
  }

  @Test
  void jsonAndYamlRoundTrip() {
    MultiLayerConfiguration c =
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(
                new CausalSelfAttentionLayer.Builder()
                    .nIn(16)
                    .nOut(16)
                    .nHeads(4)
                    .attentionPattern("local:8+strided:8")
                    .blockSize(8)
                    .projectionPattern("block8")
                    .projectionDensity(0.5)
                    .hasBias(false)
                    .build())
            .layer(new LayerNormLayer.Builder().nIn(16).eps(1e-6).build())
            .layer(
                new RnnOutputLayer.Builder().nIn(16).nOut(5).activation(Activation.SOFTMAX).build())
            .build();
    MultiLayerConfiguration j = MultiLayerConfiguration.fromJson(c.toJson());
    assertEquals(c, j);
    assertEquals(c, MultiLayerConfiguration.fromYaml(c.toYaml()));
    CausalSelfAttentionLayer a = (CausalSelfAttentionLayer) j.getConf(0).getLayer();
    assertEquals("local:8+strided:8", a.getAttentionPattern());
    assertEquals(4, a.getNHeads());
    assertEquals(8, a.getBlockSize());
    assertEquals("block8", a.getProjectionPattern());
    assertEquals(1e-6, ((LayerNormLayer) j.getConf(1).getLayer()).getEps());
    MultiLayerConfiguration dense =
        new NeuralNetConfiguration.Builder()
            .list()
            .layer(new CausalSelfAttentionLayer.Builder().nIn(16).nOut(16).build())
            .build();
    assertEquals(dense, MultiLayerConfiguration.fromJson(dense.toJson()));
    assertNull(
        ((CausalSelfAttentionLayer)
                MultiLayerConfiguration.fromJson(dense.toJson()).getConf(0).getLayer())
            .getProjectionPattern());
  }

  @Test
  void badConfigs() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new CausalSelfAttentionLayer.Builder()
                    .nIn(8)
                    .nOut(8)
                    .attentionPattern("sliding:4")
                    .build());
    assertTrue(
        e.getMessage().contains("attentionPattern")
            && e.getMessage().contains("sliding:4")
            && e.getMessage().contains("local:W"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new CausalSelfAttentionLayer.Builder().nIn(8).nOut(10).nHeads(4).build());
    assertTrue(
        e.getMessage().contains("nOut")
            && e.getMessage().contains("10")
            && e.getMessage().contains("nHeads"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new CausalSelfAttentionLayer.Builder().nIn(8).nOut(8).blockSize(0).build());
    assertTrue(
        e.getMessage().contains("blockSize") && e.getMessage().contains("0"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new CausalSelfAttentionLayer.Builder()
                    .nIn(8)
                    .nOut(8)
                    .projectionPattern("block8")
                    .projectionDensity(-0.1)
                    .build());
    assertTrue(
        e.getMessage().contains("density") && e.getMessage().contains("-0.1"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new CausalSelfAttentionLayer.Builder()
                    .nIn(12)
                    .nOut(16)
                    .projectionPattern("block8")
                    .build());
    assertTrue(e.getMessage().contains("nIn") && e.getMessage().contains("12"), e.getMessage());
    MultiLayerNetwork n = net("local:2", 4, 4, 2, 4, 8, null, new NoOp());
    e = assertThrows(IllegalArgumentException.class, () -> n.output(input(1, 4, 6, 1)));
    assertTrue(
        e.getMessage().contains("T = 6")
            && e.getMessage().contains("blockSize = 4")
            && e.getMessage().contains("multiple"),
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> n.output(input(1, 5, 8, 1)));
    assertTrue(e.getMessage().contains("input shape"), e.getMessage());
  }
}
