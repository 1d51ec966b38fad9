package org.sparseflow.layers.sparsify;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import org.sparseflow.layers.config.SparsityConfig;

/**
 * What {@link Sparsify} did to a model: one entry per layer (DL4J) or weight / attention block
 * (SameDiff) with the chosen pattern and density, the density measured on the result where masks
 * exist, or the reason the element stayed dense.
 */
public final class SparsifyReport {

  /** The one-line summary of a config that heads a report. */
  public static String describe(SparsityConfig cfg) {
    return "pattern="
        + cfg.getPattern()
        + " sparsity="
        + cfg.getSparsity()
        + " distribution="
        + cfg.getDistribution()
        + " initialMask="
        + cfg.getInitialMask()
        + " seed="
        + cfg.getSeed();
  }

  /** What happened to one element. */
  public enum Status {
    /** Weights masked (and possibly the attention pattern changed). */
    SPARSE,
    /** Only the attention pattern changed (weights dense). */
    SPARSE_ATTENTION,
    /**
     * Replaced by another layer type but nothing sparse (e.g. causal replacement of
     * SelfAttentionLayer).
     */
    REPLACED_DENSE,
    /** Left as it was. */
    DENSE,
    /**
     * A SameDiff op replaced by a fused SparseFlow op computing the same function (layer norm,
     * GELU, a bias add folded into a sparse matmul): faster, not sparser.
     */
    FUSED,
    /**
     * Left as it was because SparseFlow has no sparse version of this kind of layer (recurrent:
     * LSTM, GRU, SimpleRnn; convolution).
     */
    UNSUPPORTED
  }

  /**
   * @param name layer / vertex / SameDiff variable name
   * @param originalType type before (class simple name or SameDiff op name)
   * @param resultType type after
   * @param status outcome
   * @param pattern weight pattern when sparse, else null
   * @param targetDensity density asked for (1 when dense)
   * @param measuredDensity kept fraction of the weights measured on the result (NaN when not
   *     measurable, e.g. a configuration whose masks are drawn at init)
   * @param attentionPattern attention pattern set, or null
   * @param reason why (for DENSE: why it stayed dense)
   */
  public record Entry(
      String name,
      String originalType,
      String resultType,
      Status status,
      String pattern,
      double targetDensity,
      double measuredDensity,
      String attentionPattern,
      long weightCount,
      String reason) {
    public Entry withMeasuredDensity(double d) {
      return with(d, reason);
    }

    public Entry withReason(String r) {
      return with(measuredDensity, r);
    }

    private Entry with(double measured, String why) {
      return new Entry(
          name,
          originalType,
          resultType,
          status,
          pattern,
          targetDensity,
          measured,
          attentionPattern,
          weightCount,
          why);
    }
  }

  private final String configSource;
  private final List<Entry> entries;

  public SparsifyReport(String configSource, List<Entry> entries) {
    this.configSource = configSource;
    this.entries = List.copyOf(entries);
  }

  public static SparsifyReport noConfig() {
    return new SparsifyReport("none (model left dense)", List.of());
  }

  public String configSource() {
    return configSource;
  }

  public List<Entry> entries() {
    return entries;
  }

  public Entry entry(String name) {
    for (Entry e : entries) {
      if (e.name().equals(name)) {
        return e;
      }
    }
    return null;
  }

  public List<Entry> withStatus(Status s) {
    List<Entry> out = new ArrayList<>();
    for (Entry e : entries) {
      if (e.status() == s) {
        out.add(e);
      }
    }
    return Collections.unmodifiableList(out);
  }

  public List<Entry> sparse() {
    return withStatus(Status.SPARSE);
  }

  public boolean changedAnything() {
    for (Entry e : entries) {
      if (e.status() != Status.DENSE && e.status() != Status.UNSUPPORTED) {
        return true;
      }
    }
    return false;
  }

  /**
   * True when the config's sparsity selected something: an entry made sparse, given a sparse
   * attention pattern or replaced for it. Fusions alone do not count, so a config whose include
   * matches nothing is still noticed on a SameDiff graph that was fused.
   */
  public boolean selectedAnything() {
    for (Entry e : entries) {
      if (e.status() != Status.DENSE
          && e.status() != Status.UNSUPPORTED
          && e.status() != Status.FUSED) {
        return true;
      }
    }
    return false;
  }

  /** Weighted target density over the SPARSE entries (kept weights / weights), NaN if none. */
  public double targetDensityOfSparse() {
    double kept = 0, n = 0;
    for (Entry e : sparse()) {
      kept += e.targetDensity() * e.weightCount();
      n += e.weightCount();
    }
    return n == 0 ? Double.NaN : kept / n;
  }

  /** Weighted measured density over the SPARSE entries, NaN if none or not measured. */
  public double measuredDensityOfSparse() {
    double kept = 0, n = 0;
    for (Entry e : sparse()) {
      if (Double.isNaN(e.measuredDensity())) {
        return Double.NaN;
      }
      kept += e.measuredDensity() * e.weightCount();
      n += e.weightCount();
    }
    return n == 0 ? Double.NaN : kept / n;
  }

  /** A fixed-width table, one line per entry. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    sb.append("Sparsify report (config: ").append(configSource).append(")\n");
    sb.append(
        String.format(
            Locale.ROOT,
            "%-28s %-26s %-26s %-16s %-12s %8s %8s %10s  %s%n",
            "name",
            "from",
            "to",
            "status",
            "pattern",
            "target",
            "measured",
            "weights",
            "attention / reason"));
    for (Entry e : entries) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%-28s %-26s %-26s %-16s %-12s %8.4f %8s %10d  %s%n",
              e.name(),
              e.originalType(),
              e.resultType(),
              e.status(),
              e.pattern() == null ? "-" : e.pattern(),
              e.targetDensity(),
              Double.isNaN(e.measuredDensity())
                  ? "-"
                  : String.format(Locale.ROOT, "%.4f", e.measuredDensity()),
              e.weightCount(),
              (e.attentionPattern() == null ? "" : "attention=" + e.attentionPattern() + " ")
                  + (e.reason() == null ? "" : e.reason())));
    }
    double t = targetDensityOfSparse(), m = measuredDensityOfSparse();
    if (!Double.isNaN(t)) {
      sb.append(
          String.format(
              Locale.ROOT,
              "sparse weights: target density %.4f, measured %s%n",
              t,
              Double.isNaN(m) ? "- (masks drawn at init)" : String.format(Locale.ROOT, "%.4f", m)));
    }
    return sb.toString();
  }
}
