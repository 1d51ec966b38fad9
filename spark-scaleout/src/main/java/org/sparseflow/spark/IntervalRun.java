package org.sparseflow.spark;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.deeplearning4j.nn.api.Model;

/**
 * The driver-side interval bookkeeping that {@link SparkMstTrainer} and {@link ParallelMstTrainer}
 * share: which MST intervals a fit runs, when it stops early, the interval log, the driver's mask
 * re-application and the periodic checkpoints.
 */
final class IntervalRun {
  private final DriverMst mst;
  private final String runId;
  private final List<SparkMstTrainer.IntervalLog> log = new ArrayList<>();
  private File checkpointDir;
  private int checkpointEvery = 1;
  private int stopAfterIntervals = Integer.MAX_VALUE;

  IntervalRun(DriverMst mst, String runId) {
    this.mst = mst;
    this.runId = runId;
  }

  /**
   * Writes a checkpoint into {@code dir} every {@code everyIntervals} intervals and after the last.
   */
  void checkpoint(File dir, int everyIntervals) {
    if (everyIntervals < 1) {
      throw new IllegalArgumentException(
          "everyIntervals = " + everyIntervals + " is invalid; allowed: >= 1");
    }
    this.checkpointDir = dir;
    this.checkpointEvery = everyIntervals;
  }

  /** A resumed run keeps writing its checkpoints into the directory it was loaded from. */
  void resumedFrom(File dir) {
    this.checkpointDir = dir;
  }

  void stopAfterIntervals(int n) {
    this.stopAfterIntervals = n;
  }

  String runId() {
    return runId;
  }

  List<SparkMstTrainer.IntervalLog> log() {
    return new ArrayList<>(log);
  }

  /** Intervals of the whole MST schedule (the last one may be partial). */
  int intervals() {
    int deltaT = mst.deltaT();
    return (int) ((mst.totalSteps() + deltaT - 1) / deltaT);
  }

  /** The interval the MST state is in: 0 for a fresh run, later for a resumed one. */
  int firstInterval() {
    return (int) (mst.core().step() / mst.deltaT());
  }

  /** Whether interval {@code i} runs when {@code done} intervals ran in this fit. */
  boolean runs(int i, int done) {
    return i < intervals() && done < stopAfterIntervals;
  }

  /** Re-applies every mask of {@code net}; returns the weights that had leaked out of them. */
  static long reapplyMasks(Model net) {
    long leaked = 0;
    for (MaskedWeights.Ref r : MaskedWeights.find(net)) {
      leaked += MaskedWeights.violations(r);
      r.layer.applyMasks();
    }
    return leaked;
  }

  void record(SparkMstTrainer.IntervalLog entry) {
    log.add(entry);
  }

  /**
   * Ends interval {@code i} on the driver after its training: re-applies the masks, runs MST's
   * interval step over {@code deltaT} steps with the dense gradients from {@code gradients}, and
   * records the log entry it returns ({@code workers}: the executors' audit, or null).
   */
  SparkMstTrainer.IntervalLog end(
      Model net,
      int i,
      int deltaT,
      double score,
      Supplier<Map<String, float[]>> gradients,
      MaskAudit.Summary workers) {
    long leaked = reapplyMasks(net);
    DriverMst.IntervalResult res = mst.intervalDone(net, deltaT, score, gradients);
    SparkMstTrainer.IntervalLog entry =
        new SparkMstTrainer.IntervalLog(i, score, leaked, res, workers);
    record(entry);
    return entry;
  }

  /** Saves a checkpoint after interval {@code i} when one is due ({@code done} ran before it). */
  void checkpointIfDue(Model net, int i, int done) throws IOException {
    boolean last = i == intervals() - 1 || done + 1 >= stopAfterIntervals;
    if (checkpointDir != null && ((i + 1) % checkpointEvery == 0 || last)) {
      ScaleOutCheckpoint.save(checkpointDir, net, mst);
    }
  }
}
