package org.sparseflow.bench.mst;

import org.nd4j.linalg.schedule.ISchedule;
import org.nd4j.shade.jackson.annotation.JsonProperty;

/**
 * Learning rate falling linearly from {@code initialValue} at iteration 0 to 0 at iteration {@code
 * steps}. Written here because ND4J M2.1's {@code PolySchedule} computes {@code initial * (1 + i /
 * maxIter)^power}, which rises (to twice the initial value for power 1) instead of decaying.
 */
public final class LinearDecaySchedule implements ISchedule {
  private static final long serialVersionUID = 1L;

  private final double initialValue;
  private final int steps;

  public LinearDecaySchedule(
      @JsonProperty("initialValue") double initialValue, @JsonProperty("steps") int steps) {
    if (!(initialValue > 0) || steps < 1) {
      throw new IllegalArgumentException(
          "initialValue = "
              + initialValue
              + ", steps = "
              + steps
              + " are not allowed; allowed: initialValue > 0, steps >= 1");
    }
    this.initialValue = initialValue;
    this.steps = steps;
  }

  @Override
  public double valueAt(int iteration, int epoch) {
    return initialValue * Math.max(0.0, 1.0 - (double) iteration / steps);
  }

  @Override
  public ISchedule clone() {
    return new LinearDecaySchedule(initialValue, steps);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LinearDecaySchedule l && l.initialValue == initialValue && l.steps == steps;
  }

  @Override
  public int hashCode() {
    return Double.hashCode(initialValue) * 31 + steps;
  }

  public double getInitialValue() {
    return initialValue;
  }

  public int getSteps() {
    return steps;
  }
}
