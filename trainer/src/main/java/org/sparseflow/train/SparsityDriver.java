package org.sparseflow.train;

import java.nio.file.Path;
import java.util.Map;

/**
 * What the trainer needs from the sparsity side of a run (dense, a static mask, or MST): attach to
 * the model, report density and training FLOPs, and save/restore its own state inside the
 * checkpoint.
 */
public interface SparsityDriver {

  /** e.g. {@code dense} or {@code mst (preset mst)}. */
  String description();

  /** Called once before training (and again after a resume, after the model is loaded). */
  void attach(TrainableModel model, TrainConfig config);

  /**
   * Called after each training step's fit, before {@link #stepFlops}: MST hands a DL4J model with
   * packed weights a network rebuilt for a new phase's block slots here.
   */
  default void afterFit(TrainableModel model) {}

  /** Global density of the sparsifiable weights (1.0 when dense). */
  double density();

  /** Training FLOPs (forward + backward) of the step that just finished. */
  double stepFlops(long step);

  /** True when {@link #stepFlops} is a formula estimate rather than an exact count. */
  boolean flopsAreEstimate();

  /** Extra per-step metrics (phase, attention pattern, ...); may be empty. */
  default Map<String, Object> stepMetrics() {
    return Map.of();
  }

  /** Opaque state saved in the checkpoint (null = none). */
  default byte[] saveState() {
    return null;
  }

  default void restoreState(byte[] state) {}

  /** Writes plots of its own (schedule, density heat map) into {@code dir}; best effort. */
  default void writePlots(Path dir) {}
}
