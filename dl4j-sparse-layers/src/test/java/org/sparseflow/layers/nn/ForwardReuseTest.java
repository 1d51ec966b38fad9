package org.sparseflow.layers.nn;

import static org.junit.jupiter.api.Assertions.*;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.deeplearning4j.gradientcheck.GradientCheckUtil;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.WorkspaceMode;
import org.deeplearning4j.nn.conf.graph.ElementWiseVertex;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.junit.jupiter.api.Test;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.activations.impl.ActivationGELU;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The layers keep their training forward state for backprop (ForwardCache) and compute GELU's
 * derivative from the kept sigmoid (GeluKernels); the NWC layout of the attention and layer-norm
 * layers. Each against the path it replaces.
 */
class ForwardReuseTest {

  static INDArray rand(DataType dt, long seed, long... shape) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.rand(dt, shape).subi(0.5).muli(4);
  }

  @Test
  void geluKernelsEqualDl4jGelu() {
    for (DataType dt : new DataType[] {DataType.DOUBLE, DataType.FLOAT}) {
      double tol = dt == DataType.DOUBLE ? 1e-12 : 1e-5;
      ActivationGELU ref = new ActivationGELU();
      assertTrue(GeluKernels.supports(ref, dt));
      assertFalse(
          GeluKernels.supports(new ActivationGELU(true), dt),
          "the precise (tanh) GELU is another function");
      INDArray z = rand(dt, 1, 7, 5);
      INDArray eps = rand(dt, 2, 7, 5);
      z.putScalar(0, 3, 0.0); // gelu(z) / z is 0 / 0 here: the sigmoid is 1/2
      INDArray a = GeluKernels.forward(z);
      assertTrue(ref.getActivation(z.dup(), true).equalsWithEps(a, tol), dt + " forward");
      INDArray expected = ref.backprop(z.dup(), eps.dup()).getFirst();
      double[] bias = new double[5];
      INDArray got = GeluKernels.backward(z, a, eps, bias);
      assertTrue(expected.equalsWithEps(got, tol), dt + " backward");
      assertArrayEquals(expected.sum(0).toDoubleVector(), bias, tol, "column sums");
      // the gradient in another memory order, and a strided view, give the same result
      assertTrue(
          expected.equalsWithEps(GeluKernels.backward(z, a, eps.dup('f'), null), tol),
          dt + " 'f' gradient");
      INDArray wide = rand(dt, 2, 7, 10);
      INDArray view = wide.get(NDArrayIndex.all(), NDArrayIndex.interval(0, 5));
      assertTrue(
          ref.backprop(z.dup(), view.dup())
              .getFirst()
              .equalsWithEps(GeluKernels.backward(z, a, view, null), tol));
      // z in column-major order: result and column sums follow
      INDArray zf = z.dup('f');
      assertTrue(
          expected.equalsWithEps(
              GeluKernels.backward(zf, GeluKernels.forward(zf), eps, bias), tol));
      assertArrayEquals(expected.sum(0).toDoubleVector(), bias, tol, "column sums, 'f'");
    }
  }

  /**
   * Backprop right after the training forward pass (state reused) equals backprop that recomputes
   * the forward pass.
   */
  @Test
  void reusedForwardStateGivesTheRecomputedGradients() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
    try {
      MultiLayerConfiguration c =
          new NeuralNetConfiguration.Builder()
              .seed(4)
              .dataType(DataType.DOUBLE)
              .updater(new NoOp())
              .list()
              .layer(
                  new CausalSelfAttentionLayer.Builder()
                      .nOut(8)
                      .nHeads(2)
                      .attentionPattern("local:2")
                      .blockSize(2)
                      .projectionPattern("block8")
                      .projectionDensity(0.5)
                      .build())
              .layer(
                  new TimeDistributed(
                      new SparseDenseLayer.Builder()
                          .nOut(16)
                          .pattern("block8")
                          .density(0.5)
                          .activation(Activation.GELU)
                          .build(),
                      RNNFormat.NCW))
              .layer(
                  new TimeDistributed(
                      new SparseDenseLayer.Builder()
                          .nOut(8)
                          .pattern("unstructured")
                          .density(0.5)
                          .activation(Activation.TANH)
                          .build(),
                      RNNFormat.NCW))
              .layer(
                  new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                      .activation(Activation.IDENTITY)
                      .nOut(3)
                      .dataFormat(RNNFormat.NCW)
                      .build())
              .setInputType(InputType.recurrent(8, 8, RNNFormat.NCW))
              .build();
      MultiLayerNetwork n = new MultiLayerNetwork(c);
      n.init();
      n.initGradientsView();
      INDArray x = rand(DataType.DOUBLE, 5, 2, 8, 8);
      LayerWorkspaceMgr mgr = LayerWorkspaceMgr.noWorkspaces();
      for (int i = 0; i < 3; i++) {
        Layer l = n.getLayer(i);
        INDArray in = i == 0 ? x : n.feedForwardToLayer(i, x, false).get(i);
        l.setInput(in.dup(), mgr);
        INDArray out = l.activate(true, mgr);
        INDArray eps = rand(DataType.DOUBLE, 6 + i, out.shape());
        Pair<Gradient, INDArray> reused = l.backpropGradient(eps.dup(), mgr);
        Map<String, INDArray> g1 = copy(reused.getFirst());
        INDArray dx1 = reused.getSecond().dup();
        // no forward pass since: the state was used once, so this backprop recomputes it
        Pair<Gradient, INDArray> recomputed = l.backpropGradient(eps.dup(), mgr);
        assertTrue(
            dx1.equalsWithEps(recomputed.getSecond(), 1e-12), "layer " + i + " input gradient");
        for (Map.Entry<String, INDArray> e : g1.entrySet()) {
          assertTrue(
              e.getValue().equalsWithEps(recomputed.getFirst().getGradientFor(e.getKey()), 1e-12),
              "layer " + i + " gradient " + e.getKey());
        }
        if (i == 0) {
          // state kept for another input is not used: backprop follows the current input
          l.setInput(in.mul(2), mgr);
          l.activate(true, mgr);
          l.setInput(in.dup(), mgr);
          assertTrue(dx1.equalsWithEps(l.backpropGradient(eps.dup(), mgr).getSecond(), 1e-12));
        }
      }
    } finally {
      Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
    }
  }

  private static Map<String, INDArray> copy(Gradient g) {
    Map<String, INDArray> m = new LinkedHashMap<>();
    g.gradientForVariable().forEach((k, v) -> m.put(k, v.dup()));
    return m;
  }

  /**
   * Pre-LN residual block (attention + GELU MLP) in NWC and NCW: same outputs and gradients,
   * transposed.
   */
  static ComputationGraph block(RNNFormat f, IUpdater updater) {
    ComputationGraphConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(3)
            .dataType(DataType.DOUBLE)
            .updater(updater)
            .trainingWorkspaceMode(WorkspaceMode.ENABLED)
            .graphBuilder()
            .addInputs("in")
            .setInputTypes(InputType.recurrent(8, 8, f))
            .addLayer("ln", new LayerNormLayer.Builder().dataFormat(f).build(), "in")
            .addLayer(
                "attn",
                new CausalSelfAttentionLayer.Builder()
                    .nOut(8)
                    .nHeads(2)
                    .attentionPattern("local:2")
                    .blockSize(2)
                    .projectionPattern("block8")
                    .projectionDensity(0.5)
                    .dataFormat(f)
                    .build(),
                "ln")
            .addVertex("res", new ElementWiseVertex(ElementWiseVertex.Op.Add), "in", "attn")
            .addLayer(
                "fc",
                new TimeDistributed(
                    new SparseDenseLayer.Builder()
                        .nOut(16)
                        .pattern("block8")
                        .density(0.5)
                        .activation(Activation.GELU)
                        .build(),
                    f),
                "res")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(2)
                    .dataFormat(f)
                    .build(),
                "fc")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(c);
    g.init();
    return g;
  }

  /** A lone LayerNorm layer (n = 6, NWC or NCW) in {@code dt}, fixed gain and bias. */
  static Layer layerNorm(DataType dt, RNNFormat f) {
    MultiLayerNetwork n =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(3)
                .dataType(dt)
                .updater(new NoOp())
                .list()
                .layer(new LayerNormLayer.Builder().nIn(6).dataFormat(f).build())
                .layer(
                    new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                        .activation(Activation.IDENTITY)
                        .nIn(6)
                        .nOut(2)
                        .dataFormat(f)
                        .build())
                .build());
    n.init();
    n.getParam("0_g").assign(Nd4j.create(new double[][] {{0.5, 1.5, -1.0, 2.0, 0.7, 1.1}}));
    n.getParam("0_b").assign(Nd4j.create(new double[][] {{0.1, -0.2, 0.3, 0.0, 1.0, -0.4}}));
    n.initGradientsView();
    return n.getLayer(0);
  }

  @Test
  void floatLayerNormRowsPathEqualsTheDoublePath() {
    LayerWorkspaceMgr mgr = LayerWorkspaceMgr.noWorkspaces();
    INDArray x = rand(DataType.DOUBLE, 21, 3, 5, 6).muli(3).addi(1),
        eps = rand(DataType.DOUBLE, 22, 3, 5, 6);
    Layer ref = layerNorm(DataType.DOUBLE, RNNFormat.NWC);
    ref.setInput(x, mgr);
    INDArray yRef = ref.activate(true, mgr);
    Pair<Gradient, INDArray> gRef = ref.backpropGradient(eps, mgr);
    for (boolean forwardFirst : new boolean[] {true, false}) {
      Layer l = layerNorm(DataType.FLOAT, RNNFormat.NWC);
      INDArray xf = x.castTo(DataType.FLOAT);
      l.setInput(xf, mgr);
      INDArray y =
          l.activate(forwardFirst, mgr); // inference forward keeps no state: backprop recomputes
      assertTrue(yRef.castTo(DataType.FLOAT).equalsWithEps(y, 1e-5), "forward");
      Pair<Gradient, INDArray> g = l.backpropGradient(eps.castTo(DataType.FLOAT), mgr);
      assertTrue(
          gRef.getSecond().castTo(DataType.FLOAT).equalsWithEps(g.getSecond(), 1e-4),
          "dx, forward state kept: " + forwardFirst);
      for (String p : new String[] {"g", "b"}) {
        assertTrue(
            gRef.getFirst()
                .getGradientFor(p)
                .castTo(DataType.FLOAT)
                .equalsWithEps(g.getFirst().getGradientFor(p), 1e-4),
            p + ", forward state kept: " + forwardFirst);
      }
      // the kept state is used once: a second backward pass recomputes and agrees
      assertTrue(
          g.getSecond()
              .equalsWithEps(
                  l.backpropGradient(eps.castTo(DataType.FLOAT), mgr).getSecond(), 1e-5));
    }
  }

  @Test
  void nwcBlockEqualsNcwBlock() {
    ComputationGraph ncw = block(RNNFormat.NCW, new Adam(1e-2)),
        nwc = block(RNNFormat.NWC, new Adam(1e-2));
    nwc.setParams(ncw.params()); // weights and masks
    INDArray x = rand(DataType.DOUBLE, 9, 3, 8, 8), y = rand(DataType.DOUBLE, 10, 3, 2, 8);
    INDArray xt = x.permute(0, 2, 1).dup('c'), yt = y.permute(0, 2, 1).dup('c');
    assertTrue(ncw.outputSingle(x).permute(0, 2, 1).equalsWithEps(nwc.outputSingle(xt), 1e-10));
    // training steps with workspaces on: the reused forward state and NWC views stay valid through
    // backprop
    for (int i = 0; i < 3; i++) {
      ncw.fit(new DataSet(x, y));
      nwc.fit(new DataSet(xt, yt));
    }
    assertTrue(ncw.params().equalsWithEps(nwc.params(), 1e-9), "parameters after 3 Adam steps");
  }

  @Test
  void gradientCheckNwcBlock() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
    try {
      ComputationGraph g = block(RNNFormat.NWC, new NoOp());
      g.getParam("ln_g")
          .assign(Nd4j.create(new double[][] {{0.7, 1.6, 1.1, 0.9, 1.2, 0.8, 1.3, 0.6}}));
      Set<String> masks = Set.of("attn_Mq", "attn_Mk", "attn_Mv", "attn_Mo", "fc_M");
      assertTrue(
          GradientCheckUtil.checkGradients(
              new GradientCheckUtil.GraphConfig()
                  .net(g)
                  .excludeParams(masks)
                  .inputs(new INDArray[] {rand(DataType.DOUBLE, 11, 2, 8, 8)})
                  .labels(new INDArray[] {rand(DataType.DOUBLE, 12, 2, 8, 2)})
                  .subset(true)
                  .maxPerParam(8)));
    } finally {
      Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
    }
  }
}
