package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.weightinit.impl.XavierInitScheme;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;

class SameDiffListenerTest {

  static SameDiff mlp() {
    Nd4j.getRandom().setSeed(11);
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.DOUBLE, -1, 12);
    SDVariable lbl = sd.placeHolder("label", DataType.DOUBLE, -1, 3);
    SDVariable w0 = sd.var("w0", new XavierInitScheme('c', 12, 32), DataType.DOUBLE, 12, 32);
    SDVariable b0 = sd.zero("b0", DataType.DOUBLE, 32);
    SDVariable w1 = sd.var("w1", new XavierInitScheme('c', 32, 3), DataType.DOUBLE, 32, 3);
    SDVariable out = sd.math().tanh(in.mmul(w0).add(b0)).mmul(w1);
    sd.loss().meanSquaredError("loss", lbl, out, null);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  static MstConfig config(int total) {
    MstConfig c = Dl4jListenerTest.config(total);
    c.setInclude(List.of("w0", "w1"));
    return c;
  }

  static INDArray mask(MstListener mst, String k) {
    LayerMask m = mst.core().masks().get(k);
    return Nd4j.create(m.toElementMask(), new long[] {m.rows(), m.cols()}, 'c')
        .castTo(DataType.DOUBLE);
  }

  @Test
  void masksUpdatesAndResetsAdamState() {
    SameDiff sd = mlp();
    MstListener mst = new MstListener(config(40));
    mst.addTo(sd);
    List<DataSet> d = Dl4jListenerTest.data(40);
    for (int i = 0; i < 29; i++) {
      sd.fit(d.get(i));
      for (String k : List.of("w0", "w1")) {
        assertEquals(
            0.0, sd.getArrForVarName(k).mul(mask(mst, k).rsub(1)).norm1Number().doubleValue(), 0.0);
      }
    }
    Map<String, INDArray> before = new HashMap<>();
    for (String k : List.of("w0", "w1")) {
      before.put(k, mask(mst, k));
    }
    sd.fit(d.get(29)); // topology update in restoration: grows
    assertEquals(6, mst.core().topologyUpdates());
    int grownTotal = 0;
    for (String k : List.of("w0", "w1")) {
      INDArray grown = mask(mst, k).mul(before.get(k).rsub(1));
      grownTotal += grown.sumNumber().intValue();
      assertEquals(0.0, sd.getArrForVarName(k).mul(grown).norm1Number().doubleValue(), 0.0);
      GradientUpdater<?> u = sd.getUpdaterMap().get(k);
      for (Object s : u.getState().values()) {
        assertEquals(0.0, ((INDArray) s).mul(grown).norm1Number().doubleValue(), 0.0, "Adam reset");
      }
    }
    assertTrue(grownTotal > 0);
  }

  @Test
  void resetBiasCorrectionMakesARegrownVariablesFirstAdamStepTheLearningRate() {
    // see Dl4jListenerTest: a fresh Adam state's first step is lr * sign(g); corrected with the
    // global step 30
    // it would be 0.574 lr
    double lr = 1e-2;
    for (boolean correct : new boolean[] {false, true}) {
      SameDiff sd = mlp();
      MstConfig c = config(40);
      c.setResetBiasCorrection(correct);
      MstListener mst = new MstListener(c.validate());
      mst.addTo(sd);
      List<DataSet> d = Dl4jListenerTest.data(40);
      for (int i = 0; i < 29; i++) {
        sd.fit(d.get(i));
      }
      Map<String, INDArray> before = new HashMap<>();
      for (String k : List.of("w0", "w1")) {
        before.put(k, mask(mst, k));
      }
      sd.fit(d.get(29));
      Map<String, INDArray> grown = new HashMap<>();
      for (String k : List.of("w0", "w1")) {
        grown.put(k, mask(mst, k).mul(before.get(k).rsub(1)));
      }
      sd.fit(d.get(30));
      int n = 0;
      for (String k : List.of("w0", "w1")) {
        for (double step : Dl4jListenerTest.magnitudesAt(sd.getArrForVarName(k), grown.get(k))) {
          if (step == 0) {
            continue; // a dead hidden unit (its fan-in or fan-out fully pruned): zero gradient
          }
          if (correct) {
            assertEquals(lr, step, 1e-3 * lr, k);
          } else {
            assertEquals(0.574 * lr, step, 1e-2 * lr, k);
          }
          n++;
        }
      }
      assertTrue(n > 0, "connections were regrown");
    }
  }

  @Test
  void updateScaleMultipliesTheUpdateOfSparseVariables() {
    DataSet d = Dl4jListenerTest.data(1).get(0);
    Map<String, INDArray> steps = new HashMap<>();
    Map<String, Double> scales = new HashMap<>();
    for (double alpha : new double[] {0.0, 1.0}) {
      SameDiff sd = mlp();
      sd.setTrainingConfig(
          TrainingConfig.builder()
              .updater(new Sgd(1e-2))
              .dataSetFeatureMapping("in")
              .dataSetLabelMapping("label")
              .build());
      MstConfig c = config(40);
      c.setUpdateScaleExponent(alpha);
      MstListener mst = new MstListener(c.validate());
      mst.addTo(sd);
      Map<String, INDArray> w0 = new HashMap<>();
      for (String k : List.of("w0", "w1", "b0")) {
        w0.put(k, sd.getArrForVarName(k).dup());
      }
      sd.fit(d);
      for (String k : List.of("w0", "w1", "b0")) {
        INDArray step = sd.getArrForVarName(k).sub(w0.get(k));
        steps.put(k + alpha, k.startsWith("w") ? step.mul(mask(mst, k)) : step); // active positions
        scales.put(k + alpha, mst.core().updateScale(k));
      }
    }
    for (String k : List.of("w0", "w1")) {
      double s = scales.get(k + 1.0);
      assertEquals(1.0, scales.get(k + 0.0), 0.0);
      assertTrue(s > 1.5 || !k.equals("w0"), k + " scale " + s); // w1 (32x3) may be dense under ER
      assertTrue(steps.get(k + 0.0).norm1Number().doubleValue() > 0);
      assertTrue(
          steps.get(k + 0.0).mul(s).equalsWithEps(steps.get(k + 1.0), 1e-12), k + ": step x " + s);
    }
    assertTrue(
        steps.get("b00.0").equalsWithEps(steps.get("b01.0"), 1e-12), "dense variables unscaled");
  }

  @Test
  void sidecarStateRoundTrip(@TempDir Path dir) throws Exception {
    SameDiff sd = mlp();
    MstListener mst = new MstListener(config(40));
    mst.addTo(sd);
    List<DataSet> d = Dl4jListenerTest.data(12);
    for (DataSet ds : d) {
      sd.fit(ds);
    }
    File f = dir.resolve("gpt.sd").toFile();
    MstCheckpoint.save(sd, f, mst);
    assertEquals(mst.state(), MstCheckpoint.loadState(f));
    SameDiff back = SameDiff.load(f, true);
    MstListener resumed = MstListener.resume(MstCheckpoint.loadState(f));
    resumed.addTo(back);
    back.fit(d.get(0));
    assertEquals(13, resumed.core().step());
    assertEquals(mst.core().masks(), resumed.core().masks());
  }
}
