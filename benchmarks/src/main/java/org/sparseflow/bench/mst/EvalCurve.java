package org.sparseflow.bench.mst;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.UpdateRecord;

/** Validation loss against cumulative FLOPs at {@code points} evenly spaced steps of a run. */
final class EvalCurve {
  private final int steps;
  private final int points;
  private final double[] flops;
  private final double[] loss;
  private int k;

  EvalCurve(int steps, int points) {
    this.steps = steps;
    this.points = points;
    this.flops = new double[points];
    this.loss = new double[points];
  }

  /** Whether to evaluate after 0-based step {@code step}: every steps/points and at the end. */
  boolean due(int step) {
    boolean every = (step + 1) % Math.max(1, steps / points) == 0;
    return k < points && (every || step == steps - 1);
  }

  /**
   * Adds a point after 0-based step {@code step} and prints the progress line {@code <label> step
   * s/steps val_loss=.. density=.. attention=.. <seconds>s}.
   */
  void add(
      String label,
      int step,
      double cumulativeFlops,
      double valLoss,
      double density,
      String attention,
      long trainNanos) {
    flops[k] = cumulativeFlops;
    loss[k] = valLoss;
    k++;
    System.out.printf(
        Locale.ROOT,
        "  %s step %d/%d val_loss=%.4f density=%.3f attention=%s %.0fs%n",
        label,
        step + 1,
        steps,
        valLoss,
        density,
        attention,
        trainNanos / 1e9);
  }

  /** The run's outcome, with the FLOPs counted by {@code counted}. */
  MstRun result(
      String variant,
      MstCore counted,
      long trainNanos,
      double overheadPct,
      List<UpdateRecord> records,
      MstConfig config) {
    return new MstRun(
        variant,
        loss[k - 1],
        counted.cumulativeFlops(),
        counted.cumulativeDenseFlops(),
        trainNanos / 1e9,
        overheadPct,
        points(),
        records,
        config);
  }

  /** [0] FLOPs, [1] losses, as many points as were added. */
  double[][] points() {
    return new double[][] {Arrays.copyOf(flops, k), Arrays.copyOf(loss, k)};
  }
}
