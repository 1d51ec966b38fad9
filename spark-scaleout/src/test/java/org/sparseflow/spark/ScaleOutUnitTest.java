package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.mst.core.MstConfig;

/** The pieces of the scale-out loop that need no Spark. */
class ScaleOutUnitTest {

  /**
   * Driver-bound sparse MLP at MST step 0 of a schedule that starts sparse (so masks prune
   * something).
   */
  static MultiLayerNetwork boundSparseNet(DriverMst mst) {
    MultiLayerNetwork net = ScaleOutFixtures.sparseMlp(3);
    mst.bind(net);
    return net;
  }

  static MstConfig startsSparse() {
    MstConfig c = ScaleOutFixtures.mst(5, 4);
    c.getSchedule().setInitialSparsity(0.5);
    return c.withTotalSteps(20);
  }

  @Test
  void bindWritesTheDriverMasksIntoMaskParamsAndZeroesPrunedWeights() {
    DriverMst mst = new DriverMst(startsSparse());
    MultiLayerNetwork net = boundSparseNet(mst);
    List<MaskedWeights.Ref> refs = MaskedWeights.find(net);
    assertEquals(List.of("0_W", "1_W", "2_W"), refs.stream().map(r -> r.name).toList());
    double minKept = 1.0;
    for (MaskedWeights.Ref r : refs) {
      assertEquals(0, MaskedWeights.violations(r), r.name);
      double kept = r.mask().sumNumber().doubleValue() / r.mask().length();
      assertEquals(mst.masks().get(r.name).density(), kept, 1e-9, r.name);
      minKept = Math.min(minKept, kept);
    }
    assertTrue(
        minKept < 1.0, "some layer must be sparse at step 0 (ER may keep small layers dense)");
    assertEquals(mst.digests().get("0_W"), MaskedWeights.digest(refs.get(0).mask()));
  }

  @Test
  void digestSeparatesMasksAndViolationsCountLeaks() {
    INDArray a = Nd4j.create(new float[] {1, 0, 1, 0}, new long[] {2, 2});
    INDArray b = Nd4j.create(new float[] {1, 1, 0, 0}, new long[] {2, 2});
    assertEquals(MaskedWeights.digest(a), MaskedWeights.digest(a.dup()));
    assertNotEquals(MaskedWeights.digest(a), MaskedWeights.digest(b));

    DriverMst mst = new DriverMst(startsSparse());
    MultiLayerNetwork net = boundSparseNet(mst);
    MaskedWeights.Ref r = MaskedWeights.find(net).get(0);
    INDArray m = r.mask();
    long[] pruned = null;
    for (int i = 0; i < m.rows() && pruned == null; i++) {
      for (int j = 0; j < m.columns(); j++) {
        if (m.getDouble(i, j) == 0.0) {
          pruned = new long[] {i, j};
          break;
        }
      }
    }
    r.weight().putScalar(pruned, 0.5);
    assertEquals(1, MaskedWeights.violations(r));

    MaskGuardListener guard = new MaskGuardListener("unit-leak", 0, mst.digests(), 1);
    guard.iterationDone(net, 0, 0);
    List<MaskLedger.Observation> obs = MaskLedger.observations("unit-leak");
    assertEquals(1, obs.size());
    assertEquals(1, obs.get(0).violations, "the leak is reported");
    assertTrue(obs.get(0).masksMatchDriver);
    assertEquals(0, MaskedWeights.violations(r), "and repaired");
    MaskLedger.clear("unit-leak");

    MaskGuardListener stale = new MaskGuardListener("unit-stale", 7, Map.of("0_W", 1L), 1);
    stale.iterationDone(net, 0, 0);
    assertTrue(
        !MaskLedger.observations("unit-stale").get(0).masksMatchDriver,
        "foreign masks are detected");
    MaskLedger.clear("unit-stale");
  }

  @Test
  void denseGradientsEqualTheGradientOfAnEquivalentDenseNetwork() {
    DriverMst mst = new DriverMst(startsSparse());
    MultiLayerNetwork sparse = boundSparseNet(mst);
    DataSet batch = ScaleOutFixtures.teacherData(1, 5).get(0);
    Map<String, float[]> g =
        DenseGradients.local(sparse, mst.core().config(), List.of(batch).iterator(), 1);

    // same function with stock layers: weights W o M (already masked) and biases copied
    MultiLayerNetwork dense =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .dataType(DataType.FLOAT)
                .updater(new Sgd(0.1))
                .list()
                .layer(
                    new DenseLayer.Builder()
                        .nIn(ScaleOutFixtures.IN)
                        .nOut(ScaleOutFixtures.HIDDEN)
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new DenseLayer.Builder()
                        .nIn(ScaleOutFixtures.HIDDEN)
                        .nOut(ScaleOutFixtures.HIDDEN)
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                        .nIn(ScaleOutFixtures.HIDDEN)
                        .nOut(ScaleOutFixtures.CLASSES)
                        .activation(Activation.SOFTMAX)
                        .build())
                .build());
    dense.init();
    for (int l = 0; l < 3; l++) {
      dense.getLayer(l).setParam("W", sparse.getLayer(l).getParam("W").dup());
      dense.getLayer(l).setParam("b", sparse.getLayer(l).getParam("b").dup());
    }
    dense.setInput(batch.getFeatures());
    dense.setLabels(batch.getLabels());
    dense.computeGradientAndScore();
    for (String name : List.of("0_W", "1_W", "2_W")) {
      float[] want = dense.gradient().getGradientFor(name).dup('c').data().asFloat();
      assertArrayEquals(want, g.get(name), 1e-5f, name);
    }
    // the dense gradient is nonzero at pruned positions (what regrowth needs)
    INDArray m0 = sparse.getLayer(0).getParam("M");
    float[] g0 = g.get("0_W");
    float[] mask = m0.dup('c').data().asFloat();
    double atPruned = 0;
    for (int i = 0; i < g0.length; i++) {
      if (mask[i] == 0f) {
        atPruned += Math.abs(g0[i]);
      }
    }
    assertTrue(atPruned > 0);
  }

  @Test
  void intervalDoneRunsOneTopologyUpdatePerDeltaT() {
    MstConfig cfg = startsSparse();
    DriverMst mst = new DriverMst(cfg);
    MultiLayerNetwork net = boundSparseNet(mst);
    List<DataSet> data = ScaleOutFixtures.teacherData(2, 9);
    int[] gradientCalls = {0};
    for (int i = 0; i < 4; i++) {
      Map<String, Long> before = mst.digests();
      DriverMst.IntervalResult r =
          mst.intervalDone(
              net,
              cfg.getDeltaT(),
              1.0,
              () -> {
                gradientCalls[0]++;
                return DenseGradients.local(net, cfg, data.iterator(), 2);
              });
      assertEquals((i + 1L) * cfg.getDeltaT(), r.stepAfter);
      assertEquals(i < 3, r.topologyUpdated, "interval " + i);
      if (r.pruned + r.grown > 0) {
        assertNotEquals(before, mst.digests(), "changed topology must change the broadcast masks");
      }
      for (MaskedWeights.Ref ref : MaskedWeights.find(net)) {
        assertEquals(0, MaskedWeights.violations(ref));
      }
    }
    assertEquals(3, gradientCalls[0], "mixed growth asks for gradients once per update");
  }

  @Test
  void rejectsModelsWhoseMasksCannotTravel() {
    MultiLayerNetwork stock =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .list()
                .layer(new DenseLayer.Builder().nIn(4).nOut(4).build())
                .layer(
                    new OutputLayer.Builder(LossFunctions.LossFunction.MSE).nIn(4).nOut(2).build())
                .build());
    stock.init();
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> new DriverMst(startsSparse()).bind(stock));
    assertTrue(
        e.getMessage().contains("0_W") && e.getMessage().contains("mask param"), e.getMessage());
  }

  @Test
  void checkpointRoundTripKeepsParamsMasksAndMstState(@TempDir File dir) throws Exception {
    assertThrows(IllegalArgumentException.class, () -> ScaleOutCheckpoint.load(dir));
    MstConfig cfg = startsSparse();
    DriverMst mst = new DriverMst(cfg);
    MultiLayerNetwork net = boundSparseNet(mst);
    mst.intervalDone(
        net,
        cfg.getDeltaT(),
        1.0,
        () -> DenseGradients.local(net, cfg, ScaleOutFixtures.teacherData(1, 2).iterator(), 1));
    ScaleOutCheckpoint.save(dir, net, mst);
    ScaleOutCheckpoint c = ScaleOutCheckpoint.load(dir);
    assertEquals(net.params(), c.model().params());
    assertEquals(mst.state(), c.state());
    DriverMst resumed = DriverMst.resume(c.state());
    resumed.bind(c.model());
    assertEquals(mst.digests(), resumed.digests());
    assertEquals(mst.core().step(), resumed.core().step());
  }
}
