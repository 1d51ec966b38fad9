package org.sparseflow.spark;

import java.io.File;
import java.util.List;
import java.util.UUID;
import org.deeplearning4j.nn.api.Model;
import org.sparseflow.mst.core.MstState;

/**
 * What {@link SparkMstTrainer} and {@link ParallelMstTrainer} share: the network they train in
 * place, the driver-side MST and the {@link IntervalRun} (checkpoints, resume, early stop, interval
 * log) with its fluent settings.
 *
 * @param <M> the network type
 * @param <T> the trainer, returned by the fluent settings
 */
abstract class IntervalMstTrainer<M extends Model, T extends IntervalMstTrainer<M, T>> {
  final M net;
  final DriverMst mst;
  final IntervalRun run;

  /** Binds nothing yet: the trainer validates its own arguments, then calls {@code mst.bind}. */
  IntervalMstTrainer(M net, DriverMst mst, String runIdPrefix) {
    this.net = net;
    this.mst = mst;
    this.run = new IntervalRun(mst, runIdPrefix + UUID.randomUUID());
  }

  @SuppressWarnings("unchecked")
  private T self() {
    return (T) this;
  }

  /** A resumed trainer keeps writing its checkpoints into the directory it was loaded from. */
  final T resumedFrom(File dir) {
    run.resumedFrom(dir);
    return self();
  }

  /**
   * Writes a checkpoint into {@code dir} every {@code everyIntervals} intervals (and after the
   * last).
   */
  public T checkpoint(File dir, int everyIntervals) {
    run.checkpoint(dir, everyIntervals);
    return self();
  }

  /**
   * Stops after this many intervals of this call (to simulate a job that dies; the checkpoint
   * stays).
   */
  public T stopAfterIntervals(int n) {
    run.stopAfterIntervals(n);
    return self();
  }

  /** The network, trained in place. */
  public M network() {
    return net;
  }

  public DriverMst mst() {
    return mst;
  }

  public MstState state() {
    return mst.state();
  }

  public String runId() {
    return run.runId();
  }

  public List<SparkMstTrainer.IntervalLog> log() {
    return run.log();
  }
}
