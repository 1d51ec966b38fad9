package org.sparseflow.train.optim;

import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.shade.jackson.annotation.JsonCreator;
import org.nd4j.shade.jackson.annotation.JsonProperty;

/**
 * Gradient clipping by L2 norm, per parameter: before the updater sees a parameter's gradient g, g
 * is scaled by {@code min(1, maxNorm / ||g||_2)}.
 *
 * <p>Why a {@link Regularization}: SameDiff's training session hands each parameter's gradient to
 * its updater as soon as backprop produces it, and the only hook that runs before the updater is a
 * regularization with {@link ApplyStep#BEFORE_UPDATER}. A global-norm clip (one factor for all
 * parameters, as nanoGPT does) would need every gradient first, which that session never exposes;
 * this is the per-parameter form DL4J offers as {@code GradientNormalization.ClipL2PerParamType}.
 * It adds nothing to the loss.
 */
public final class ClipL2PerParam implements Regularization {
  private static final long serialVersionUID = 1L;

  private final double maxNorm;

  @JsonCreator
  public ClipL2PerParam(@JsonProperty("maxNorm") double maxNorm) {
    if (!(maxNorm > 0) || Double.isInfinite(maxNorm)) {
      throw new IllegalArgumentException("--grad-clip: " + maxNorm + " must be > 0 and finite");
    }
    this.maxNorm = maxNorm;
  }

  @JsonProperty("maxNorm")
  public double maxNorm() {
    return maxNorm;
  }

  @Override
  public ApplyStep applyStep() {
    return ApplyStep.BEFORE_UPDATER;
  }

  @Override
  public void apply(INDArray param, INDArray gradView, double lr, int iteration, int epoch) {
    double norm = gradView.norm2Number().doubleValue();
    if (norm > maxNorm) {
      gradView.muli(maxNorm / norm);
    }
  }

  @Override
  public double score(INDArray param, int iteration, int epoch) {
    return 0.0;
  }

  @Override
  public Regularization clone() {
    return new ClipL2PerParam(maxNorm);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ClipL2PerParam c && c.maxNorm == maxNorm;
  }

  @Override
  public int hashCode() {
    return Double.hashCode(maxNorm);
  }

  @Override
  public String toString() {
    return "ClipL2PerParam(" + maxNorm + ")";
  }
}
