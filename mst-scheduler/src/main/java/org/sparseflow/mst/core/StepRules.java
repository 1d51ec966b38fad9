package org.sparseflow.mst.core;

import org.sparseflow.ops.pattern.MaskPattern;

/** When MST changes masks and needs the dense gradient: pure functions of the config and step. */
final class StepRules {
  private StepRules() {}

  /**
   * A topology update follows step t when topology updates are on, there are masks, (t + 1) is a
   * multiple of ΔT and t + 1 is before the run's end.
   */
  static boolean topology(MstConfig config, boolean hasMasks, long t) {
    long total = config.getSchedule().getTotalSteps();
    return config.isUpdateTopology()
        && hasMasks
        && (t + 1) % config.getDeltaT() == 0
        && t + 1 < total;
  }

  /**
   * A prune-only step follows step t when {@code pruneInterval > 0}, (t + 1) is a multiple of it,
   * no topology update runs after t, and the schedule's target rose over the last interval
   * (warm-up). N:M patterns have a fixed density and never prune here.
   */
  static boolean prune(MstConfig config, MaskPattern pattern, boolean hasMasks, long t) {
    int k = config.getPruneInterval();
    long total = config.getSchedule().getTotalSteps();
    if (k <= 0
        || !config.isUpdateTopology()
        || !hasMasks
        || pattern.kind() == MaskPattern.Kind.NM
        || (t + 1) % k != 0
        || t + 1 >= total
        || topology(config, hasMasks, t)) {
      return false;
    }
    SparsitySchedule s = config.getSchedule();
    return s.sparsityAt(t + 1) > s.sparsityAt(Math.max(0, t + 1 - k));
  }

  /**
   * Step t needs the dense weight gradient when a topology update follows it and its growth ranks
   * pruned positions by gradient magnitude (RigL, MST's mixed growing). Sparse executors compute dW
   * only on kept units on every other step.
   */
  static boolean denseGradient(MstConfig config, boolean topologyStep) {
    return topologyStep
        && config.getGrowMode() != GrowMode.RANDOM
        && config.getGrowMode() != GrowMode.NONE;
  }
}
