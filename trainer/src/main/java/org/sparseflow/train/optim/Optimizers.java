package org.sparseflow.train.optim;

import java.util.List;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.linalg.schedule.ISchedule;

/**
 * The optimizer of a training run from its options: Adam at a learning rate that follows {@link
 * WarmupDecaySchedule} (a constant rate when neither warm-up nor decay is asked for, so runs
 * without these options are unchanged), plus {@link ClipL2PerParam} when clipping is on.
 *
 * @param learningRate peak learning rate, in (0, 1]
 * @param warmupFraction share of the run spent warming up linearly from 0, in [0, 0.5]
 * @param decay decay after the warm-up
 * @param gradClip per-parameter L2 clip norm; 0 = off
 * @param totalSteps the run's length in optimizer steps
 */
public record Optimizers(
    double learningRate,
    double warmupFraction,
    WarmupDecaySchedule.Decay decay,
    double gradClip,
    int totalSteps) {

  /** Where the cosine and linear decays end, as a fraction of the peak (GPT-2 practice: 1/10). */
  public static final double MIN_RATIO = 0.1;

  /** Largest allowed warm-up share of a run. */
  public static final double MAX_WARMUP = 0.5;

  /** Validates; messages name the command-line option, the value and what is allowed. */
  public Optimizers {
    if (!(learningRate > 0 && learningRate <= 1)) {
      throw new IllegalArgumentException("--lr: " + learningRate + " is outside (0, 1]");
    }
    if (!(warmupFraction >= 0 && warmupFraction <= MAX_WARMUP)) {
      throw new IllegalArgumentException(
          "--lr-warmup: " + warmupFraction + " is outside [0, " + MAX_WARMUP + "]");
    }
    if (decay == null) {
      throw new IllegalArgumentException("--lr-decay: missing; allowed: none, cosine, linear");
    }
    if (!(gradClip >= 0) || Double.isInfinite(gradClip)) {
      throw new IllegalArgumentException(
          "--grad-clip: " + gradClip + " is not allowed; allowed: 0 (off) or a finite norm > 0");
    }
    if (totalSteps < 1) {
      throw new IllegalArgumentException("--steps: " + totalSteps + " must be >= 1");
    }
  }

  /** True when the rate is constant and nothing is clipped (the defaults). */
  public boolean isPlain() {
    return warmupSteps() == 0 && decay == WarmupDecaySchedule.Decay.NONE && gradClip == 0;
  }

  /** Warm-up length in steps: the fraction of the run, rounded. */
  public int warmupSteps() {
    return (int) Math.round(warmupFraction * totalSteps);
  }

  /** The learning-rate schedule, or null for a constant rate. */
  public ISchedule schedule() {
    if (warmupSteps() == 0 && decay == WarmupDecaySchedule.Decay.NONE) {
      return null;
    }
    return new WarmupDecaySchedule(learningRate, warmupSteps(), totalSteps, decay, MIN_RATIO);
  }

  /** Adam with the schedule (or the constant rate). */
  public IUpdater updater() {
    ISchedule s = schedule();
    return s == null ? new Adam(learningRate) : new Adam(s);
  }

  /** The regularizations SameDiff applies around the updater: the clip, when on. */
  public List<Regularization> regularization() {
    return gradClip > 0 ? List.of(new ClipL2PerParam(gradClip)) : List.of();
  }
}
