package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.updater.BaseMultiLayerUpdater;
import org.deeplearning4j.nn.updater.UpdaterBlock;
import org.deeplearning4j.util.ModelSerializer;
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
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.RampShape;
import org.sparseflow.mst.core.SparsitySchedule;

class Dl4jListenerTest {

  static MstConfig config(int total) {
    MstConfig c = MstConfig.preset("mst");
    c.setSchedule(
        SparsitySchedule.builder()
            .initialSparsity(0.5)
            .ultraSparsity(0.8)
            .finalSparsity(0.6)
            .warmup(0.0, 0.3)
            .restoration(0.7, 0.9)
            .warmupShape(RampShape.LINEAR)
            .build());
    c.setDeltaT(5);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setInclude(List.of("0_W", "1_W"));
    return c.withTotalSteps(total);
  }

  static MultiLayerNetwork mlp() {
    return mlp(new Adam(1e-2));
  }

  static MultiLayerNetwork mlp(IUpdater updater) {
    return mlp(updater, DataType.DOUBLE);
  }

  static MultiLayerNetwork mlp(IUpdater updater, DataType dataType) {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(7)
                .dataType(dataType)
                .updater(updater)
                .list()
                .layer(
                    new DenseLayer.Builder().nIn(12).nOut(32).activation(Activation.TANH).build())
                .layer(
                    new DenseLayer.Builder().nIn(32).nOut(16).activation(Activation.TANH).build())
                .layer(
                    new OutputLayer.Builder(LossFunctions.LossFunction.MSE)
                        .nIn(16)
                        .nOut(3)
                        .activation(Activation.IDENTITY)
                        .build())
                .build());
    net.init();
    return net;
  }

  static List<DataSet> data(int n) {
    Nd4j.getRandom().setSeed(3);
    List<DataSet> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      INDArray x = Nd4j.randn(DataType.DOUBLE, 8, 12);
      out.add(new DataSet(x, x.get(NDArrayIndex.all(), NDArrayIndex.interval(0, 3)).mul(2).add(1)));
    }
    return out;
  }

  @Test
  void masksWeightsAndFollowsSchedule() {
    MultiLayerNetwork net = mlp();
    MstListener mst = new MstListener(config(40));
    net.setListeners(mst);
    List<DataSet> d = data(40);
    double first = Double.NaN;
    for (int i = 0; i < 20; i++) {
      net.fit(d.get(i));
      if (i == 0) {
        first = net.score();
      }
      for (String k : List.of("0_W", "1_W")) {
        INDArray w = net.getParam(k);
        INDArray m = maskOf(mst, k);
        assertEquals(
            0.0, w.mul(m.rsub(1)).norm1Number().doubleValue(), 0.0, "weights outside mask at " + i);
      }
    }
    assertTrue(net.score() < first, "still learns");
    assertEquals(4, mst.core().topologyUpdates()); // after steps 4, 9, 14, 19
    // after step 20 (ultra phase from 12): global target 0.8
    double kept = 0;
    double total = 0;
    for (LayerMask m : mst.core().masks().values()) {
      kept += m.activeUnits();
      total += m.unitCount();
    }
    assertEquals(0.2, kept / total, 0.01);
    assertTrue(mst.overheadMillisPerStep() >= 0);
  }

  static INDArray maskOf(MstListener mst, String name) {
    LayerMask m = mst.core().masks().get(name);
    return Nd4j.create(m.toElementMask(), new long[] {m.rows(), m.cols()}, 'c')
        .castTo(DataType.DOUBLE);
  }

  /** |w| at the positions where {@code where} is 1 (row by row). */
  static List<Double> magnitudesAt(INDArray w, INDArray where) {
    List<Double> out = new ArrayList<>();
    for (long r = 0; r < w.rows(); r++) {
      for (long c = 0; c < w.columns(); c++) {
        if (where.getDouble(r, c) == 1.0) {
          out.add(Math.abs(w.getDouble(r, c)));
        }
      }
    }
    return out;
  }

  /** Adam m and v of param {@code key}, in the weight's shape. */
  static List<INDArray> adamState(MultiLayerNetwork net, String key) {
    List<INDArray> out = new ArrayList<>();
    INDArray w = net.getParam(key);
    BaseMultiLayerUpdater<?> u = (BaseMultiLayerUpdater<?>) net.getUpdater();
    for (UpdaterBlock b : u.getUpdaterBlocks()) {
      for (UpdaterBlock.ParamState ps : b.getLayersAndVariablesInBlock()) {
        String name = ((Layer) ps.getLayer()).getIndex() + "_" + ps.getParamName();
        if (name.equals(key)) {
          long off = ps.getParamOffsetStart() - b.getParamOffsetStart();
          for (Object o : b.getGradientUpdater().getState().values()) {
            INDArray s = (INDArray) o;
            INDArray flat = s.reshape(s.length()).get(NDArrayIndex.interval(off, off + w.length()));
            out.add(flat.dup().reshape(w.ordering(), w.shape()));
          }
        }
      }
    }
    return out;
  }

  @Test
  void regrownWeightsStartAtZeroWithFreshAdamMoments() {
    MultiLayerNetwork net = mlp();
    MstConfig cfg = config(40);
    MstListener mst = new MstListener(cfg);
    net.setListeners(mst);
    List<DataSet> d = data(40);
    for (int i = 0;
        i < 29;
        i++) { // steps 0..28; the update after step 29 falls in restoration (grows)
      net.fit(d.get(i));
    }
    Map<String, INDArray> before = new HashMap<>();
    for (String k : List.of("0_W", "1_W")) {
      before.put(k, maskOf(mst, k));
      List<INDArray> st = adamState(net, k);
      assertEquals(2, st.size(), "Adam has m and v");
      // active positions have non-zero moments before the update
      assertTrue(st.get(0).mul(before.get(k)).norm1Number().doubleValue() > 0);
    }
    net.fit(d.get(29)); // step 29: topology update
    assertEquals(6, mst.core().topologyUpdates());
    int grownTotal = 0;
    for (String k : List.of("0_W", "1_W")) {
      INDArray after = maskOf(mst, k);
      INDArray grown = after.mul(before.get(k).rsub(1));
      grownTotal += grown.sumNumber().intValue();
      assertEquals(
          0.0,
          net.getParam(k).mul(grown).norm1Number().doubleValue(),
          0.0,
          "regrown weights are 0");
      for (INDArray s : adamState(net, k)) {
        assertEquals(
            0.0, s.mul(grown).norm1Number().doubleValue(), 0.0, "Adam state reset at regrown");
        INDArray pruned = before.get(k).mul(after.rsub(1));
        assertEquals(
            0.0, s.mul(pruned).norm1Number().doubleValue(), 0.0, "Adam state reset at pruned");
        // untouched active positions keep their moments
        assertTrue(s.mul(after.mul(before.get(k))).norm1Number().doubleValue() > 0);
      }
    }
    assertTrue(grownTotal > 0, "restoration grows connections");
  }

  @Test
  void resetBiasCorrectionMakesARegrownWeightsFirstAdamStepTheLearningRate() {
    // Adam's first step from a fresh state is lr * sign(g) (m / sqrt(v) = (1 - β1) / sqrt(1 - β2)
    // with the
    // bias corrections of step 1). A state reset at step 29 but corrected with the global step 30
    // moves by
    // lr * [sqrt(1 - β2^31) / (1 - β1^31)] * (1 - β1) / sqrt(1 - β2) = 0.574 lr instead.
    double lr = 1e-2, b1 = 0.9, b2 = 0.999;
    double uncorrected =
        Math.sqrt(1 - Math.pow(b2, 31)) / (1 - Math.pow(b1, 31)) * (1 - b1) / Math.sqrt(1 - b2);
    for (boolean correct : new boolean[] {false, true}) {
      MultiLayerNetwork net = mlp(new Adam(lr));
      MstConfig cfg = config(40);
      cfg.setResetBiasCorrection(correct);
      MstListener mst = new MstListener(cfg.validate());
      net.setListeners(mst);
      List<DataSet> d = data(40);
      for (int i = 0; i < 29; i++) {
        net.fit(d.get(i));
      }
      Map<String, INDArray> before = new HashMap<>();
      for (String k : List.of("0_W", "1_W")) {
        before.put(k, maskOf(mst, k));
      }
      net.fit(d.get(29)); // topology update after step 29 grows connections (restoration)
      Map<String, INDArray> grown = new HashMap<>();
      for (String k : List.of("0_W", "1_W")) {
        grown.put(k, maskOf(mst, k).mul(before.get(k).rsub(1)));
        assertEquals(0.0, net.getParam(k).mul(grown.get(k)).norm1Number().doubleValue(), 0.0);
      }
      net.fit(d.get(30)); // the regrown weights' first step
      int n = 0;
      for (String k : List.of("0_W", "1_W")) {
        for (double step : magnitudesAt(net.getParam(k), grown.get(k))) {
          assertEquals(
              correct ? lr : uncorrected * lr,
              step,
              1e-3 * lr,
              k + " first step, corrected = " + correct);
          n++;
        }
      }
      assertTrue(n > 0, "connections were regrown");
    }
    assertEquals(0.574, uncorrected, 1e-3);
  }

  @Test
  void directBufferResetCorrectionEqualsTheNd4jPath() {
    // float weights are corrected straight on their memory (views with offsets and 'f' strides);
    // the ND4J path
    // must give the same parameters, for element and block units
    for (String pattern : List.of("unstructured", "block8")) {
      Map<Boolean, INDArray> params = new HashMap<>();
      for (boolean fast : new boolean[] {true, false}) {
        MultiLayerNetwork net = mlp(new Adam(1e-2), DataType.FLOAT);
        MstConfig cfg = config(40);
        cfg.setPattern(pattern);
        if (pattern.startsWith("block")) {
          cfg.setInclude(List.of("1_W")); // 0_W is [12, 32]: 12 is no multiple of 8
        }
        cfg.setResetBiasCorrection(true);
        cfg.setUpdateScaleExponent(0.5);
        MstListener mst = new MstListener(cfg.validate());
        net.setListeners(mst);
        boolean before = UpdateScaler.FAST_CORRECTION;
        UpdateScaler.FAST_CORRECTION = fast;
        try {
          for (DataSet d : data(40)) {
            net.fit(
                new DataSet(
                    d.getFeatures().castTo(DataType.FLOAT), d.getLabels().castTo(DataType.FLOAT)));
          }
        } finally {
          UpdateScaler.FAST_CORRECTION = before;
        }
        assertTrue(mst.core().resetCorrection("1_W", 39, 0.9, 0.999) != null, "units were reset");
        params.put(fast, net.params().dup());
      }
      INDArray diff = params.get(true).sub(params.get(false));
      assertTrue(
          diff.amaxNumber().doubleValue() < 1e-5,
          pattern + ": max difference " + diff.amaxNumber());
      assertTrue(params.get(true).amaxNumber().doubleValue() > 0.1);
    }
  }

  @Test
  void pruneStepsBetweenUpdatesZeroPrunedWeightsAndTheirAdamMoments() {
    MultiLayerNetwork net = mlp();
    MstConfig cfg = config(40);
    cfg.setPruneInterval(2);
    MstListener mst = new MstListener(cfg.validate());
    net.setListeners(mst);
    List<DataSet> d = data(40);
    int pruneSteps = 0;
    for (int i = 0; i < 14; i++) { // linear warm-up 0.5 -> 0.8 over steps [0, 12]
      boolean prune = mst.core().isPruneStep(i);
      Map<String, INDArray> before = new HashMap<>();
      for (String k :
          prune ? List.of("0_W", "1_W") : List.<String>of()) { // masks are bound at the first fit
        before.put(k, maskOf(mst, k));
      }
      net.fit(d.get(i));
      for (String k : List.of("0_W", "1_W")) {
        INDArray after = maskOf(mst, k);
        assertEquals(
            0.0,
            net.getParam(k).mul(after.rsub(1)).norm1Number().doubleValue(),
            0.0,
            "weights outside the mask at step " + i);
        if (prune) {
          INDArray pruned = before.get(k).mul(after.rsub(1));
          assertTrue(pruned.sumNumber().doubleValue() > 0, "step " + i + " prunes " + k);
          assertEquals(
              0.0, after.mul(before.get(k).rsub(1)).sumNumber().doubleValue(), 0.0, "no growth");
          for (INDArray st : adamState(net, k)) {
            assertEquals(
                0.0, st.mul(pruned).norm1Number().doubleValue(), 0.0, "Adam state at pruned");
          }
        }
      }
      pruneSteps += prune ? 1 : 0;
    }
    assertEquals(
        5, pruneSteps); // after steps 1, 3, 5, 7 and 11 (9 is a topology update, 13 is flat)
    assertEquals(2, mst.core().topologyUpdates()); // after steps 4 and 9
    double kept = 0;
    double total = 0;
    for (LayerMask m : mst.core().masks().values()) {
      kept += m.activeUnits();
      total += m.unitCount();
    }
    assertEquals(0.2, kept / total, 0.01, "at the ultra target after the warm-up");
  }

  @Test
  void updateScaleMultipliesEachSparseWeightsStepByItsDensityPower() {
    // plain SGD: the applied step is exactly lr * gradient, so the scaled step must be s times the
    // unscaled one
    Supplier<MultiLayerNetwork> sgd = () -> mlp(new Sgd(1e-2));
    MstConfig plain = config(40);
    MstConfig scaled = plain.copy();
    scaled.setUpdateScaleExponent(1.0);
    scaled.setUpdateScaleMax(3.0);
    DataSet d = data(1).get(0);
    MultiLayerNetwork a = sgd.get(), b = sgd.get();
    MstListener ma = new MstListener(plain), mb = new MstListener(scaled.validate());
    a.setListeners(ma);
    b.setListeners(mb);
    MultiLayerNetwork init = sgd.get(); // same seed: the initial weights of a and b
    assertEquals(init.params(), b.params());
    a.fit(d);
    b.fit(d);
    for (String k : List.of("0_W", "1_W")) {
      LayerMask m = mb.core().masks().get(k);
      assertEquals(ma.core().masks().get(k), m, "same seed, same masks");
      double s = Math.min(3.0, 1.0 / m.density());
      assertTrue(s > 1.5, "density " + m.density() + " gives a real scale");
      assertEquals(s, mb.core().updateScale(k), 1e-12);
      INDArray w0 = init.getParam(k), active = maskOf(mb, k);
      INDArray stepA = a.getParam(k).sub(w0).mul(active), stepB = b.getParam(k).sub(w0).mul(active);
      assertTrue(stepA.norm1Number().doubleValue() > 0);
      assertTrue(
          stepA.mul(s).equalsWithEps(stepB, 1e-12), k + ": scaled step = " + s + " x plain step");
    }
    // the output layer is not sparse: unscaled
    assertTrue(a.getParam("2_W").equalsWithEps(b.getParam("2_W"), 1e-12));
    MstConfig bad = plain.copy();
    bad.setUpdateScaleExponent(-1);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::validate);
    assertTrue(e.getMessage().contains("updateScaleExponent = -1.0"), e.getMessage());
  }

  @Test
  void saveLoadContinueEqualsUninterruptedRun(@TempDir Path dir) throws Exception {
    saveLoadContinue(dir, 0, 12);
  }

  @Test
  void saveLoadContinueWithPruneStepsInTheWarmup(@TempDir Path dir) throws Exception {
    saveLoadContinue(dir, 2, 5); // warm-up over steps [0, 9]: prune steps before and after the save
  }

  @Test
  void saveLoadContinueWithResetBiasCorrection(@TempDir Path dir) throws Exception {
    // the reset steps of the units are part of the state: without them the resumed run corrects
    // nothing
    saveLoadContinue(dir, 2, 17, true);
  }

  private static void saveLoadContinue(Path dir, int pruneInterval, int saveAt) throws Exception {
    saveLoadContinue(dir, pruneInterval, saveAt, false);
  }

  private static void saveLoadContinue(
      Path dir, int pruneInterval, int saveAt, boolean resetCorrection) throws Exception {
    MstConfig cfg = config(30);
    cfg.setPruneInterval(pruneInterval);
    cfg.setResetBiasCorrection(resetCorrection);
    List<DataSet> d = data(30);
    MultiLayerNetwork ref = mlp();
    MstListener refMst = new MstListener(cfg.copy());
    ref.setListeners(refMst);
    for (int i = 0; i < 30; i++) {
      ref.fit(d.get(i));
    }

    MultiLayerNetwork a = mlp();
    MstListener aMst = new MstListener(cfg.copy());
    a.setListeners(aMst);
    for (int i = 0; i < saveAt; i++) {
      a.fit(d.get(i));
    }
    File f = dir.resolve("model.zip").toFile();
    MstCheckpoint.save(a, f, aMst);

    MultiLayerNetwork b = ModelSerializer.restoreMultiLayerNetwork(f, true);
    MstState state = MstCheckpoint.loadState(f);
    assertEquals(saveAt, state.getStep());
    assertEquals(
        resetCorrection, !state.getUnitResetSteps().isEmpty(), "reset steps saved iff corrected");
    MstListener bMst = MstListener.resume(state);
    assertEquals(
        pruneInterval, bMst.core().config().getPruneInterval(), "restored with the config");
    b.setListeners(bMst);
    for (int i = saveAt; i < 30; i++) {
      b.fit(d.get(i));
    }
    assertEquals(refMst.core().masks(), bMst.core().masks());
    assertEquals(refMst.state().getRngState(), bMst.state().getRngState());
    INDArray diff = ref.params().sub(b.params());
    assertTrue(
        Math.abs(diff.maxNumber().doubleValue()) < 1e-6
            && Math.abs(diff.minNumber().doubleValue()) < 1e-6,
        "params equal within 1e-6: " + diff.amaxNumber());
  }

  @Test
  void computationGraphIsSupported() {
    ComputationGraphConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .dataType(DataType.DOUBLE)
            .updater(new Adam(1e-2))
            .graphBuilder()
            .addInputs("in")
            .addLayer(
                "h",
                new DenseLayer.Builder().nIn(12).nOut(32).activation(Activation.TANH).build(),
                "in")
            .addLayer(
                "out",
                new OutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .nIn(32)
                    .nOut(3)
                    .activation(Activation.IDENTITY)
                    .build(),
                "h")
            .setOutputs("out")
            .build();
    ComputationGraph cg = new ComputationGraph(conf);
    cg.init();
    MstConfig c = config(20);
    c.setInclude(List.of("h_W"));
    MstListener mst = new MstListener(c);
    cg.setListeners(mst);
    List<DataSet> d = data(20);
    for (int i = 0; i < 12; i++) {
      cg.fit(d.get(i));
    }
    assertEquals(List.of("h_W"), List.copyOf(mst.core().masks().keySet()));
    assertEquals(2, mst.core().topologyUpdates());
    LayerMask m = mst.core().masks().get("h_W");
    INDArray mask =
        Nd4j.create(m.toElementMask(), new long[] {12, 32}, 'c').castTo(DataType.DOUBLE);
    assertEquals(0.0, cg.getParam("h_W").mul(mask.rsub(1)).norm1Number().doubleValue(), 0.0);
    assertTrue(m.density() < 0.6);
  }
}
