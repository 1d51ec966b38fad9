package org.sparseflow.train.optim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.sparseflow.train.optim.WarmupDecaySchedule.Decay;

/** The optimizer options: schedule shape, per-parameter clipping inside SameDiff, persistence. */
class OptimizersTest {

  @Test
  void warmupRisesLinearlyThenCosineFallsToATenth() {
    WarmupDecaySchedule s = new WarmupDecaySchedule(1e-3, 10, 110, Decay.COSINE, 0.1);
    assertEquals(1e-4, s.valueAt(0, 0), 1e-15);
    assertEquals(5e-4, s.valueAt(4, 0), 1e-15);
    assertEquals(1e-3, s.valueAt(9, 0), 1e-15);
    assertEquals(1e-3, s.valueAt(10, 0), 1e-15); // start of the decay: the peak
    assertEquals(0.55e-3, s.valueAt(60, 0), 1e-12); // halfway: the mean of peak and floor
    assertEquals(1e-4, s.valueAt(110, 0), 1e-15);
    assertEquals(1e-4, s.valueAt(500, 0), 1e-15); // past the end: stays at the floor
    for (int i = 11; i <= 110; i++) {
      assertTrue(s.valueAt(i, 0) <= s.valueAt(i - 1, 0), "monotone decay at " + i);
    }
  }

  @Test
  void linearDecayAndConstantRate() {
    WarmupDecaySchedule lin = new WarmupDecaySchedule(2e-3, 0, 100, Decay.LINEAR, 0.0);
    assertEquals(2e-3, lin.valueAt(0, 0), 1e-15);
    assertEquals(1e-3, lin.valueAt(50, 0), 1e-15);
    assertEquals(0.0, lin.valueAt(100, 0), 1e-15);
    Optimizers plain = new Optimizers(1e-3, 0, Decay.NONE, 0, 200);
    assertTrue(plain.isPlain());
    assertNull(plain.schedule());
    assertEquals(new Adam(1e-3), plain.updater());
    assertTrue(plain.regularization().isEmpty());
    Optimizers warm = new Optimizers(1e-3, 0.1, Decay.NONE, 0, 200);
    assertEquals(20, warm.warmupSteps());
    assertEquals(1e-3, warm.schedule().valueAt(100, 0), 1e-15);
    assertEquals(5e-5, warm.schedule().valueAt(0, 0), 1e-15);
  }

  @Test
  void badOptionsNameTheOptionAndWhatIsAllowed() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> new Optimizers(1e-3, 0.7, Decay.NONE, 0, 10));
    assertTrue(e.getMessage().contains("--lr-warmup: 0.7"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Decay.parse("--lr-decay", "cos"));
    assertTrue(e.getMessage().contains("'cos'"), e.getMessage());
    assertTrue(e.getMessage().contains("none, cosine, linear"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new Optimizers(1e-3, 0, Decay.NONE, Double.NaN, 10));
    assertTrue(e.getMessage().startsWith("--grad-clip: NaN"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new ClipL2PerParam(-1));
    assertEquals(Decay.COSINE, Decay.parse("--lr-decay", " Cosine "));
  }

  @Test
  void clipScalesOnlyGradientsAboveTheNorm() {
    ClipL2PerParam clip = new ClipL2PerParam(1.0);
    INDArray big = Nd4j.createFromArray(3.0, 4.0); // norm 5
    clip.apply(null, big, 0.1, 0, 0);
    assertEquals(1.0, big.norm2Number().doubleValue(), 1e-12);
    assertEquals(0.6, big.getDouble(0), 1e-12);
    INDArray small = Nd4j.createFromArray(0.3, 0.4);
    clip.apply(null, small, 0.1, 0, 0);
    assertEquals(0.5, small.norm2Number().doubleValue(), 1e-12);
    assertEquals(0.0, clip.score(big, 0, 0));
  }

  /** With plain SGD at lr 1, a clipped step moves W by exactly the clip norm. */
  @Test
  void sameDiffAppliesTheClipBeforeTheUpdater() {
    SameDiff sd = regression(new Sgd(1.0), List.of(new ClipL2PerParam(0.25)));
    INDArray before = sd.getVariable("w").getArr().dup();
    sd.fit(data());
    double moved = sd.getVariable("w").getArr().sub(before).norm2Number().doubleValue();
    assertEquals(0.25, moved, 1e-5);

    SameDiff free = regression(new Sgd(1.0), List.of());
    free.fit(data());
    double unclipped = free.getVariable("w").getArr().sub(before).norm2Number().doubleValue();
    assertTrue(unclipped > 1.0, "the test gradient must be large enough to clip: " + unclipped);
  }

  /**
   * A saved graph keeps the schedule and the clip, so a resumed run continues on the same curve.
   */
  @Test
  void scheduleAndClipSurviveSaveAndLoad() throws Exception {
    Optimizers o = new Optimizers(2e-3, 0.05, Decay.COSINE, 0.5, 400);
    SameDiff sd = regression(o.updater(), o.regularization());
    sd.fit(data());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    sd.save(bytes, true);
    SameDiff back = SameDiff.load(new ByteArrayInputStream(bytes.toByteArray()), true);
    TrainingConfig tc = back.getTrainingConfig();
    Adam adam = assertInstanceOf(Adam.class, tc.getUpdater());
    assertEquals(o.schedule(), adam.getLearningRateSchedule());
    assertEquals(o.regularization(), tc.getRegularization());
    assertEquals(o.schedule().valueAt(7, 0), adam.getLearningRate(7, 0), 0.0);
  }

  private static SameDiff regression(IUpdater updater, List<Regularization> regs) {
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, -1, 3);
    SDVariable y = sd.placeHolder("y", DataType.DOUBLE, -1, 2);
    SDVariable w = sd.var("w", Nd4j.zeros(DataType.DOUBLE, 3, 2));
    sd.loss().meanSquaredError("loss", y, x.mmul(w), null);
    TrainingConfig.Builder b =
        TrainingConfig.builder()
            .updater(updater)
            .dataSetFeatureMapping("x")
            .dataSetLabelMapping("y");
    for (Regularization r : regs) {
      b.addRegularization(r);
    }
    sd.setTrainingConfig(b.build());
    return sd;
  }

  private static DataSet data() {
    INDArray x = Nd4j.createFromArray(new double[][] {{1, 2, 3}, {4, 5, 6}});
    INDArray y = Nd4j.createFromArray(new double[][] {{10, -10}, {20, 30}});
    return new DataSet(x, y);
  }
}
