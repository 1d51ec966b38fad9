package org.sparseflow.train.optim;

import java.util.Locale;
import java.util.Objects;
import org.nd4j.linalg.schedule.ISchedule;
import org.nd4j.shade.jackson.annotation.JsonCreator;
import org.nd4j.shade.jackson.annotation.JsonProperty;

/**
 * Learning rate with a linear warm-up and a cosine or linear decay, by iteration.
 *
 * <p>For iteration i (0-based) of a run of {@code total} iterations with {@code warmup} warm-up
 * iterations: {@code lr(i) = base * (i + 1) / warmup} while {@code i < warmup}; afterwards, with
 * progress {@code p = (i - warmup) / (total - warmup)} clamped to [0, 1], {@code lr = min + (base -
 * min) * (1 + cos(pi p)) / 2} (cosine, SGDR, arXiv 1608.03983) or {@code base - (base - min) * p}
 * (linear), where {@code min = base * minRatio}. This is the shape GPT-2-style training uses
 * (linear warm-up, cosine decay to a tenth of the peak). Serialized by ND4J's Jackson with the
 * updater, so a saved model or checkpoint resumes on the same curve.
 */
public final class WarmupDecaySchedule implements ISchedule {
  private static final long serialVersionUID = 1L;

  /** How the rate falls after the warm-up. */
  public enum Decay {
    NONE,
    COSINE,
    LINEAR;

    /** Parses {@code none|cosine|linear} (any case); names the option on error. */
    public static Decay parse(String option, String value) {
      if (value != null) {
        for (Decay d : values()) {
          if (d.name().equalsIgnoreCase(value.trim())) {
            return d;
          }
        }
      }
      throw new IllegalArgumentException(
          option + ": '" + value + "' is not allowed; allowed: none, cosine, linear");
    }

    /** The lower-case name users type. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final double base;
  private final int warmup;
  private final int total;
  private final Decay decay;
  private final double minRatio;

  @JsonCreator
  public WarmupDecaySchedule(
      @JsonProperty("base") double base,
      @JsonProperty("warmup") int warmup,
      @JsonProperty("total") int total,
      @JsonProperty("decay") Decay decay,
      @JsonProperty("minRatio") double minRatio) {
    if (!(base > 0) || Double.isInfinite(base)) {
      throw new IllegalArgumentException("base learning rate: " + base + " must be > 0");
    }
    if (total < 1) {
      throw new IllegalArgumentException("total iterations: " + total + " must be >= 1");
    }
    if (warmup < 0 || warmup >= total && total > 1) {
      throw new IllegalArgumentException(
          "warm-up iterations: " + warmup + " is outside [0, " + (total - 1) + "]");
    }
    if (!(minRatio >= 0 && minRatio <= 1)) {
      throw new IllegalArgumentException("minimum ratio: " + minRatio + " is outside [0, 1]");
    }
    this.base = base;
    this.warmup = warmup;
    this.total = total;
    this.decay = decay == null ? Decay.NONE : decay;
    this.minRatio = minRatio;
  }

  @Override
  public double valueAt(int iteration, int epoch) {
    if (iteration < warmup) {
      return base * (iteration + 1) / warmup;
    }
    if (decay == Decay.NONE) {
      return base;
    }
    double span = Math.max(1, total - warmup);
    double p = Math.min(1.0, Math.max(0.0, (iteration - warmup) / span));
    double min = base * minRatio;
    if (decay == Decay.COSINE) {
      return min + (base - min) * 0.5 * (1 + Math.cos(Math.PI * p));
    }
    return base - (base - min) * p;
  }

  @Override
  public ISchedule clone() {
    return new WarmupDecaySchedule(base, warmup, total, decay, minRatio);
  }

  @JsonProperty("base")
  public double base() {
    return base;
  }

  @JsonProperty("warmup")
  public int warmup() {
    return warmup;
  }

  @JsonProperty("total")
  public int total() {
    return total;
  }

  @JsonProperty("decay")
  public Decay decay() {
    return decay;
  }

  @JsonProperty("minRatio")
  public double minRatio() {
    return minRatio;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WarmupDecaySchedule s
        && s.base == base
        && s.warmup == warmup
        && s.total == total
        && s.decay == decay
        && s.minRatio == minRatio;
  }

  @Override
  public int hashCode() {
    return Objects.hash(base, warmup, total, decay, minRatio);
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT,
        "WarmupDecaySchedule(base=%s, warmup=%d, total=%d, decay=%s, minRatio=%s)",
        base,
        warmup,
        total,
        decay.label(),
        minRatio);
  }
}
