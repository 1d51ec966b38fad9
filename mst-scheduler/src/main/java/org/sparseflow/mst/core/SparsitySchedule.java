package org.sparseflow.mst.core;

import java.util.Arrays;
import java.util.Objects;

/**
 * Sparsity Variation (MST, arXiv 2408.11746): the global target sparsity as a function of the
 * training step, in three phases.
 *
 * <pre>
 *   step:      0 .. warmupStart .. warmupEnd .. restorationStart .. restorationEnd .. totalSteps
 *   sparsity:  initial | ramp(initial -> ultra) | ultra (held) | ramp(ultra -> final) | final
 *   phase:     WARMUP ..................... | ULTRA ......... | RESTORATION ...................
 * </pre>
 *
 * Boundaries are fractions of {@code totalSteps} ({@link BoundaryUnit#FRACTION}) or absolute steps.
 * The authors' code writes the same thing as a piecewise-constant dict of targets per 1000
 * iterations; {@link RampShape#STEP} reproduces that, LINEAR and CUBIC (Zhu &amp; Gupta) are smooth
 * alternatives.
 *
 * <p>A Jackson bean (public getters/setters, no-arg constructor); {@link #validate()} rejects bad
 * schedules and is called by the {@link Builder} and by {@code MstConfig} loading.
 */
public final class SparsitySchedule {

  /** How boundary values are interpreted. */
  public enum BoundaryUnit {
    FRACTION,
    STEPS
  }

  private long totalSteps;
  private BoundaryUnit boundaryUnit = BoundaryUnit.FRACTION;
  private double initialSparsity;
  private double ultraSparsity;
  private double finalSparsity;
  private double warmupStart;
  private double warmupEnd;
  private double restorationStart = 1.0;
  private double restorationEnd = 1.0;
  private RampShape warmupShape = RampShape.CUBIC;
  private RampShape restorationShape = RampShape.LINEAR;
  private int stepLevels = 4;

  public SparsitySchedule() {}

  /** A constant sparsity for the whole run (static sparse training, RigL, SET; 0 = dense). */
  public static SparsitySchedule constant(double sparsity) {
    return builder()
        .initialSparsity(sparsity)
        .ultraSparsity(sparsity)
        .finalSparsity(sparsity)
        .warmup(0, 0)
        .restoration(1, 1)
        .build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Checks every field; throws IllegalArgumentException naming the field, its value and what is
   * allowed.
   */
  public SparsitySchedule validate() {
    Args.sparsity("initialSparsity", initialSparsity);
    Args.sparsity("ultraSparsity", ultraSparsity);
    Args.sparsity("finalSparsity", finalSparsity);
    Objects.requireNonNull(boundaryUnit, "boundaryUnit");
    if (warmupShape == null) {
      throw Args.bad("warmupShape", null, Arrays.toString(RampShape.values()));
    }
    if (restorationShape == null) {
      throw Args.bad("restorationShape", null, Arrays.toString(RampShape.values()));
    }
    if (stepLevels < 1) {
      throw Args.bad("stepLevels", stepLevels, "an integer >= 1");
    }
    if (totalSteps < 0) {
      throw Args.bad("totalSteps", totalSteps, "0 (not yet known) or a positive step count");
    }
    double[] b = {warmupStart, warmupEnd, restorationStart, restorationEnd};
    String[] names = {"warmupStart", "warmupEnd", "restorationStart", "restorationEnd"};
    for (int i = 0; i < 4; i++) {
      if (!(b[i] >= 0) || Double.isInfinite(b[i])) {
        throw Args.bad(names[i], b[i], "a non-negative number");
      }
      if (boundaryUnit == BoundaryUnit.FRACTION && b[i] > 1.0) {
        throw Args.bad(
            names[i], b[i], "a fraction of totalSteps in [0, 1] (boundaryUnit = FRACTION)");
      }
      if (boundaryUnit == BoundaryUnit.STEPS && b[i] != Math.rint(b[i])) {
        throw Args.bad(names[i], b[i], "a whole step number (boundaryUnit = STEPS)");
      }
      if (boundaryUnit == BoundaryUnit.STEPS && totalSteps > 0 && b[i] > totalSteps) {
        throw Args.bad(names[i], b[i], "a step <= totalSteps = " + totalSteps);
      }
      if (i > 0 && b[i] < b[i - 1]) {
        throw new IllegalArgumentException(
            "phases out of order: "
                + names[i]
                + " = "
                + b[i]
                + " < "
                + names[i - 1]
                + " = "
                + b[i - 1]
                + "; required warmupStart <= warmupEnd <= restorationStart"
                + " <= restorationEnd");
      }
    }
    return this;
  }

  /** Copy with the run length set (needed to resolve fractional boundaries). */
  public SparsitySchedule withTotalSteps(long steps) {
    Args.positive("totalSteps", steps);
    SparsitySchedule c = copy();
    c.totalSteps = steps;
    return c.validate();
  }

  /**
   * Copy for another target: the final density (1 - finalSparsity) becomes {@code density}, and
   * every level keeps its density's ratio to the final one, so the ultra-sparse phase stays as much
   * sparser than the end of the run as the preset made it (a dense level, density 1, stays dense,
   * and no level gets denser than 1). Phase boundaries, shapes and the warm-up's start are
   * unchanged. This is the rule by which one preset serves any target density.
   */
  public SparsitySchedule withFinalDensity(double density) {
    if (!(density > 0.0 && density <= 1.0)) {
      throw Args.bad("density", density, "a final density in (0, 1]");
    }
    double factor = density / (1.0 - finalSparsity); // finalSparsity < 1 (validated)
    SparsitySchedule c = copy();
    c.initialSparsity = scaledSparsity(initialSparsity, factor);
    c.ultraSparsity = scaledSparsity(ultraSparsity, factor);
    c.finalSparsity = 1.0 - density;
    return c.validate();
  }

  /**
   * Copy that starts sparse: the initial sparsity becomes the ultra sparsity, so the warm-up holds
   * the ultra-sparse level instead of pruning down from a denser start (for storage that holds only
   * kept weights: packed). Everything else is unchanged.
   */
  public SparsitySchedule withSparseStart() {
    SparsitySchedule c = copy();
    c.initialSparsity = Math.max(initialSparsity, ultraSparsity);
    return c.validate();
  }

  /** The sparsity whose density is this one's times factor (dense stays dense, at most 1). */
  private static double scaledSparsity(double sparsity, double factor) {
    if (sparsity == 0.0) {
      return 0.0;
    }
    return Math.max(0.0, 1.0 - Math.min(1.0, (1.0 - sparsity) * factor));
  }

  public SparsitySchedule copy() {
    SparsitySchedule c = new SparsitySchedule();
    c.totalSteps = totalSteps;
    c.boundaryUnit = boundaryUnit;
    c.initialSparsity = initialSparsity;
    c.ultraSparsity = ultraSparsity;
    c.finalSparsity = finalSparsity;
    c.warmupStart = warmupStart;
    c.warmupEnd = warmupEnd;
    c.restorationStart = restorationStart;
    c.restorationEnd = restorationEnd;
    c.warmupShape = warmupShape;
    c.restorationShape = restorationShape;
    c.stepLevels = stepLevels;
    return c;
  }

  /** Resolved boundaries in steps: {warmupStart, warmupEnd, restorationStart, restorationEnd}. */
  public long[] boundarySteps() {
    if (boundaryUnit == BoundaryUnit.FRACTION && totalSteps <= 0) {
      throw new IllegalStateException(
          "totalSteps is not set; call withTotalSteps(n) before asking for a step"
              + " (fractional boundaries need the run length)");
    }
    double[] b = {warmupStart, warmupEnd, restorationStart, restorationEnd};
    long[] r = new long[4];
    for (int i = 0; i < 4; i++) {
      r[i] = boundaryUnit == BoundaryUnit.FRACTION ? Math.round(b[i] * totalSteps) : (long) b[i];
    }
    return r;
  }

  /** Phase of a (0-based) step. */
  public Phase phaseAt(long step) {
    long[] b = boundarySteps();
    if (step < b[1]) {
      return Phase.WARMUP;
    }
    return step < b[2] ? Phase.ULTRA : Phase.RESTORATION;
  }

  /** Global target sparsity at a (0-based) step. */
  public double sparsityAt(long step) {
    long[] b = boundarySteps();
    if (step < b[0]) {
      return initialSparsity;
    }
    if (step < b[1]) {
      return ramp(
          initialSparsity, ultraSparsity, (double) (step - b[0]) / (b[1] - b[0]), warmupShape);
    }
    if (step < b[2]) {
      return ultraSparsity;
    }
    if (step < b[3]) {
      return ramp(
          ultraSparsity, finalSparsity, (double) (step - b[2]) / (b[3] - b[2]), restorationShape);
    }
    return finalSparsity;
  }

  /** Largest target over the run (used by the FLOP model and by validation of prune-only modes). */
  public boolean everDecreases() {
    return finalSparsity < ultraSparsity || ultraSparsity < initialSparsity;
  }

  private double ramp(double from, double to, double p, RampShape shape) {
    switch (shape) {
      case LINEAR:
        return from + (to - from) * p;
      case CUBIC:
        {
          double q = 1 - p;
          return to + (from - to) * q * q * q;
        }
      case STEP:
        return from + (to - from) * Math.floor(p * stepLevels) / stepLevels;
      default:
        throw new IllegalStateException(String.valueOf(shape));
    }
  }

  // ---- bean accessors ----
  public long getTotalSteps() {
    return totalSteps;
  }

  public void setTotalSteps(long v) {
    totalSteps = v;
  }

  public BoundaryUnit getBoundaryUnit() {
    return boundaryUnit;
  }

  public void setBoundaryUnit(BoundaryUnit v) {
    boundaryUnit = v;
  }

  public double getInitialSparsity() {
    return initialSparsity;
  }

  public void setInitialSparsity(double v) {
    initialSparsity = v;
  }

  public double getUltraSparsity() {
    return ultraSparsity;
  }

  public void setUltraSparsity(double v) {
    ultraSparsity = v;
  }

  public double getFinalSparsity() {
    return finalSparsity;
  }

  public void setFinalSparsity(double v) {
    finalSparsity = v;
  }

  public double getWarmupStart() {
    return warmupStart;
  }

  public void setWarmupStart(double v) {
    warmupStart = v;
  }

  public double getWarmupEnd() {
    return warmupEnd;
  }

  public void setWarmupEnd(double v) {
    warmupEnd = v;
  }

  public double getRestorationStart() {
    return restorationStart;
  }

  public void setRestorationStart(double v) {
    restorationStart = v;
  }

  public double getRestorationEnd() {
    return restorationEnd;
  }

  public void setRestorationEnd(double v) {
    restorationEnd = v;
  }

  public RampShape getWarmupShape() {
    return warmupShape;
  }

  public void setWarmupShape(RampShape v) {
    warmupShape = v;
  }

  public RampShape getRestorationShape() {
    return restorationShape;
  }

  public void setRestorationShape(RampShape v) {
    restorationShape = v;
  }

  public int getStepLevels() {
    return stepLevels;
  }

  public void setStepLevels(int v) {
    stepLevels = v;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof SparsitySchedule)) {
      return false;
    }
    SparsitySchedule s = (SparsitySchedule) o;
    return totalSteps == s.totalSteps
        && boundaryUnit == s.boundaryUnit
        && initialSparsity == s.initialSparsity
        && ultraSparsity == s.ultraSparsity
        && finalSparsity == s.finalSparsity
        && warmupStart == s.warmupStart
        && warmupEnd == s.warmupEnd
        && restorationStart == s.restorationStart
        && restorationEnd == s.restorationEnd
        && warmupShape == s.warmupShape
        && restorationShape == s.restorationShape
        && stepLevels == s.stepLevels;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        totalSteps,
        boundaryUnit,
        initialSparsity,
        ultraSparsity,
        finalSparsity,
        warmupStart,
        warmupEnd,
        restorationStart,
        restorationEnd,
        warmupShape,
        restorationShape,
        stepLevels);
  }

  @Override
  public String toString() {
    return "SparsitySchedule{"
        + initialSparsity
        + " -"
        + warmupShape
        + "-> "
        + ultraSparsity
        + " -"
        + restorationShape
        + "-> "
        + finalSparsity
        + ", boundaries="
        + warmupStart
        + "/"
        + warmupEnd
        + "/"
        + restorationStart
        + "/"
        + restorationEnd
        + " "
        + boundaryUnit
        + ", totalSteps="
        + totalSteps
        + "}";
  }

  /** Builder; {@link #build()} validates. */
  public static final class Builder {
    private final SparsitySchedule s = new SparsitySchedule();

    public Builder totalSteps(long v) {
      s.totalSteps = v;
      return this;
    }

    public Builder boundaryUnit(BoundaryUnit v) {
      s.boundaryUnit = v;
      return this;
    }

    public Builder initialSparsity(double v) {
      s.initialSparsity = v;
      return this;
    }

    public Builder ultraSparsity(double v) {
      s.ultraSparsity = v;
      return this;
    }

    public Builder finalSparsity(double v) {
      s.finalSparsity = v;
      return this;
    }

    public Builder warmup(double start, double end) {
      s.warmupStart = start;
      s.warmupEnd = end;
      return this;
    }

    public Builder restoration(double start, double end) {
      s.restorationStart = start;
      s.restorationEnd = end;
      return this;
    }

    public Builder warmupShape(RampShape v) {
      s.warmupShape = v;
      return this;
    }

    public Builder restorationShape(RampShape v) {
      s.restorationShape = v;
      return this;
    }

    public Builder stepLevels(int v) {
      s.stepLevels = v;
      return this;
    }

    public SparsitySchedule build() {
      return s.copy().validate();
    }
  }
}
