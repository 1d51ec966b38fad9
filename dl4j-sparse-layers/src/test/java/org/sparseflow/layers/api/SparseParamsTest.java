package org.sparseflow.layers.api;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.api.BaseTrainingListener;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.nn.SparseOutputLayer;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

class SparseParamsTest {

  @BeforeAll
  static void doublePrecision() {
    Nd4j.setDefaultDataTypes(DataType.DOUBLE, DataType.DOUBLE);
  }

  @AfterAll
  static void restorePrecision() {
    Nd4j.setDefaultDataTypes(DataType.FLOAT, DataType.FLOAT);
  }

  static MultiLayerNetwork mln(String pattern, double density, IUpdater u) {
    MultiLayerNetwork n =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(1)
                .dataType(DataType.DOUBLE)
                .updater(u)
                .list()
                .layer(
                    new SparseDenseLayer.Builder()
                        .nIn(16)
                        .nOut(16)
                        .pattern(pattern)
                        .density(density)
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new SparseOutputLayer.Builder()
                        .nIn(16)
                        .nOut(4)
                        .pattern("unstructured")
                        .density(density)
                        .build())
                .build());
    n.init();
    return n;
  }

  static DataSet data(long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray x = Nd4j.rand(DataType.DOUBLE, 32, 16).subi(0.5);
    INDArray y = Nd4j.zeros(DataType.DOUBLE, 32, 4);
    for (int i = 0; i < 32; i++) {
      y.putScalar(i, i % 4, 1.0);
    }
    return new DataSet(x, y);
  }

  static double norm1(INDArray a) {
    return a.norm1Number().doubleValue();
  }

  @Test
  void findsMaskedWeightsWithLiveViews() {
    MultiLayerNetwork n = mln("unstructured", 0.5, new Adam(1e-2));
    List<SparseParam> ps = SparseParams.find(n);
    assertEquals(List.of("0_W", "1_W"), ps.stream().map(SparseParam::name).toList());
    SparseParam p = ps.get(0);
    assertEquals(PatternSpec.parse("unstructured"), p.spec());
    assertEquals(0.5, p.density(), 1e-12);
    assertEquals(n.getParam("0_M"), p.mask());
    p.weight().putScalar(0, 0, 42.0);
    assertEquals(42.0, n.getParam("0_W").getDouble(0, 0)); // live view
    assertEquals(p.mask().sumNumber().doubleValue(), p.currentMask().nnz(), 1e-9);
    assertThrows(IllegalArgumentException.class, () -> SparseParams.find(null));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparseParams.get(n, "0_X"));
    assertTrue(e.getMessage().contains("0_X") && e.getMessage().contains("0_W"), e.getMessage());
  }

  @Test
  void findsAttentionProjectionsInComputationGraph() {
    ComputationGraphConfiguration c =
        new NeuralNetConfiguration.Builder()
            .graphBuilder()
            .addInputs("in")
            .setInputTypes(InputType.recurrent(8, 4, RNNFormat.NCW))
            .addLayer(
                "attn1",
                new CausalSelfAttentionLayer.Builder()
                    .nOut(8)
                    .nHeads(2)
                    .blockSize(2)
                    .projectionPattern("unstructured")
                    .projectionDensity(0.25)
                    .build(),
                "in")
            .addLayer(
                "attn2",
                new CausalSelfAttentionLayer.Builder().nOut(8).nHeads(2).build(),
                "attn1") // dense
            .addLayer(
                "out",
                new RnnOutputLayer.Builder().nOut(3).activation(Activation.SOFTMAX).build(),
                "attn2")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(c);
    g.init();
    List<SparseParam> ps = SparseParams.find(g);
    assertEquals(
        List.of("attn1_Wq", "attn1_Wk", "attn1_Wv", "attn1_Wo"),
        ps.stream().map(SparseParam::name).toList());
    for (SparseParam p : ps) {
      assertEquals(0.25, p.density(), 1e-12);
    }
    assertEquals(g.getParam("attn1_Mk"), ps.get(1).mask());
  }

  /**
   * Positions whose mask changes get zero optimizer state; untouched positions keep theirs exactly.
   */
  @Test
  void setMaskZerosWeightsAndOptimizerStateWhereTheMaskChanged() {
    for (IUpdater u : new IUpdater[] {new Adam(1e-2), new Nesterovs(1e-2, 0.9)}) {
      MultiLayerNetwork n = mln("unstructured", 1.0, u); // start dense: state nonzero everywhere
      DataSet ds = data(3);
      for (int i = 0; i < 3; i++) {
        n.fit(ds);
      }
      SparseParam p = SparseParams.get(n, "0_W");
      List<INDArray> state = p.updaterState();
      assertEquals(u instanceof Adam ? 2 : 1, state.size());
      List<INDArray> before = state.stream().map(INDArray::dup).toList();
      for (INDArray s : before) {
        assertEquals(s.length(), s.neq(0).castTo(DataType.DOUBLE).sumNumber().doubleValue(), 1e-9);
      }

      // prune to 50%
      SparseMask half = p.spec().random(16, 16, 0.5, 7);
      p.setMask(half);
      INDArray kept = half.toDense(DataType.DOUBLE), pruned = kept.rsub(1.0);
      assertEquals(kept, p.mask());
      assertEquals(kept, n.getParam("0_M"));
      assertEquals(0.0, norm1(p.weight().mul(pruned)));
      for (int i = 0; i < state.size(); i++) {
        assertEquals(0.0, norm1(p.updaterState().get(i).mul(pruned)), "state at pruned positions");
        assertEquals(
            before.get(i).mul(kept),
            p.updaterState().get(i).mul(kept),
            "state at unchanged positions");
      }
      // the state views are views of the network's updater state, not copies
      INDArray s0 = p.updaterState().get(0);
      double old = s0.getDouble(3, 5);
      s0.putScalar(3, 5, 12345.0);
      assertEquals(
          1.0,
          n.getUpdater()
              .getStateViewArray()
              .eq(12345.0)
              .castTo(DataType.DOUBLE)
              .sumNumber()
              .doubleValue());
      s0.putScalar(3, 5, old);

      for (int i = 0; i < 3; i++) {
        n.fit(ds);
      }
      assertEquals(0.0, norm1(p.weight().mul(pruned)), "pruned weights moved");
      // regrow: swap some pruned for some kept positions
      INDArray next = kept.dup();
      int regrown = 0, dropped = 0;
      for (int r = 0; r < 16 && (regrown < 10 || dropped < 10); r++) {
        for (int c = 0; c < 16; c++) {
          if (kept.getDouble(r, c) == 0 && regrown < 10) {
            next.putScalar(r, c, 1);
            regrown++;
          } else if (kept.getDouble(r, c) == 1 && dropped < 10) {
            next.putScalar(r, c, 0);
            dropped++;
          }
        }
      }
      List<INDArray> before2 = p.updaterState().stream().map(INDArray::dup).toList();
      p.setMask(next);
      INDArray grown = next.mul(pruned), stable = next.mul(kept);
      assertEquals(10.0, grown.sumNumber().doubleValue());
      for (int i = 0; i < state.size(); i++) {
        assertEquals(0.0, norm1(p.updaterState().get(i).mul(grown)), "state at regrown positions");
        assertEquals(
            0.0, norm1(p.updaterState().get(i).mul(next.rsub(1.0))), "state at pruned positions");
        assertEquals(before2.get(i).mul(stable), p.updaterState().get(i).mul(stable));
      }
      assertEquals(0.0, norm1(p.weight().mul(grown)), "regrown weights start at zero");
      for (int i = 0; i < 3; i++) {
        n.fit(ds);
      }
      assertTrue(norm1(p.weight().mul(grown)) > 0, "regrown weights train");
      assertEquals(0.0, norm1(p.weight().mul(next.rsub(1.0))));
    }
  }

  @Test
  void denseGradientOnRequestWithoutTouchingOptimizerState() {
    MultiLayerNetwork n = mln("block8", 0.5, new Adam(1e-2));
    SparseParam p = SparseParams.get(n, "0_W");
    INDArray pruned = p.mask().rsub(1.0);
    INDArray[] seen = new INDArray[2];
    n.setListeners(
        new BaseTrainingListener() {
          @Override
          public void onGradientCalculation(Model model) {
            seen[0] = p.gradient().dup();
            seen[1] = ((MultiLayerNetwork) model).gradient().getGradientFor("0_W").dup();
          }
        });
    DataSet ds = data(5);
    n.fit(ds);
    assertEquals(0.0, norm1(seen[0].mul(pruned)), "masked gradient by default");
    p.setDenseGradientRequested(true);
    n.fit(ds);
    assertTrue(p.isDenseGradientRequested());
    assertTrue(norm1(seen[0].mul(pruned)) > 0, "dense gradient when requested");
    assertEquals(seen[1], seen[0].mul(p.mask()), "optimizer gradient = dense gradient o mask");
    assertEquals(0.0, norm1(seen[1].mul(pruned)));
    for (INDArray s : p.updaterState()) {
      assertEquals(0.0, norm1(s.mul(pruned)), "state at pruned positions untouched");
    }
    assertEquals(0.0, norm1(p.weight().mul(pruned)));
    // the dense gradient equals the gradient of the same network with a full mask (same function, W
    // o M = W)
    n.setInput(ds.getFeatures());
    n.setLabels(ds.getLabels());
    n.computeGradientAndScore();
    INDArray dense = p.gradient().dup();
    MultiLayerNetwork full = n.clone();
    SparseParams.get(full, "0_W").setMask(Nd4j.ones(DataType.DOUBLE, 16, 16));
    full.setInput(ds.getFeatures());
    full.setLabels(ds.getLabels());
    full.computeGradientAndScore();
    assertTrue(dense.equalsWithEps(full.gradient().getGradientFor("0_W"), 1e-12));
    p.setDenseGradientRequested(false);
    n.fit(ds);
    assertEquals(0.0, norm1(seen[0].mul(pruned)));
  }

  @Test
  void setMaskRejectsWrongShapeOrPattern() {
    MultiLayerNetwork n = mln("block8", 0.5, new Adam(1e-2));
    SparseParam p = SparseParams.get(n, "0_W");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> p.setMask(PatternSpec.parse("block8").random(8, 16, 0.5, 1)));
    assertTrue(
        e.getMessage().contains("0_W")
            && e.getMessage().contains("[8, 16]")
            && e.getMessage().contains("[16, 16]"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> p.setMask(PatternSpec.parse("unstructured").random(16, 16, 0.5, 1)));
    assertTrue(
        e.getMessage().contains("unstructured") && e.getMessage().contains("block8"),
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> p.setMask((INDArray) null));
  }
}
