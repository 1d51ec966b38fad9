package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * Hybrid Sparse Attention (MST): which attention pattern each layer uses in each phase. Rules are
 * tried in order; the first whose phases and layers match gives the pattern, else {@link
 * #getDefaultPattern()}. Patterns use the samediff-ops {@code AttentionPattern} syntax ("dense",
 * "local:16+strided:16", ...).
 *
 * <p>Layer selectors: {@code "all"}, a list {@code "0,2,3"}, or {@code "every:N"} (layers 0, N, 2N,
 * ...), optionally {@code "every:N/K"} (layers with index % N == K). Examples:
 *
 * <ul>
 *   <li>the authors' code: one rule {phases: [ULTRA], layers: all, pattern: local+strided}, dense
 *       otherwise;
 *   <li>dense every 4th layer: {phases:[ULTRA], layers:"every:4", pattern:dense} before the sparse
 *       rule.
 * </ul>
 *
 * <p>A rule may also carry a step window {@code [from, until)} (the authors' code switches HSA on
 * and off by iteration, {@code atten_schedule}, independently of the sparsity phases). The window
 * is in the schedule's boundary unit: a fraction of the run for {@code FRACTION}, a step for {@code
 * STEPS}; absent = no limit. E.g. a widening window: {phases:[ULTRA], until: 0.6,
 * pattern:"local:16"}, {phases:[ULTRA], until: 0.75, pattern:"local:32"}, dense after.
 */
public final class AttentionSchedule {

  /** One rule. */
  public static final class Rule {
    private List<Phase> phases = new ArrayList<>();
    private String layers = "all";
    private String pattern = "dense";
    private Double from;
    private Double until;

    public Rule() {}

    public Rule(List<Phase> phases, String layers, String pattern) {
      this.phases = new ArrayList<>(phases);
      this.layers = layers;
      this.pattern = pattern;
    }

    public List<Phase> getPhases() {
      return phases;
    }

    public void setPhases(List<Phase> v) {
      phases = v;
    }

    public String getLayers() {
      return layers;
    }

    public void setLayers(String v) {
      layers = v;
    }

    public String getPattern() {
      return pattern;
    }

    public void setPattern(String v) {
      pattern = v;
    }

    /**
     * Start of the rule's step window (inclusive), in the schedule's boundary unit; null = from the
     * start.
     */
    public Double getFrom() {
      return from;
    }

    public void setFrom(Double v) {
      from = v;
    }

    /**
     * End of the rule's step window (exclusive), in the schedule's boundary unit; null = to the
     * end.
     */
    public Double getUntil() {
      return until;
    }

    public void setUntil(Double v) {
      until = v;
    }

    /** Fluent window setter: {@code [from, until)}, either may be null. */
    public Rule window(Double from, Double until) {
      this.from = from;
      this.until = until;
      return this;
    }

    boolean matches(int layer, Phase phase) {
      Set<Phase> ps =
          phases == null || phases.isEmpty() ? EnumSet.allOf(Phase.class) : EnumSet.copyOf(phases);
      return ps.contains(phase) && layerMatches(layers, layer);
    }

    boolean inWindow(long step, SparsitySchedule s) {
      if (from == null && until == null) {
        return true;
      }
      return (from == null || step >= resolve(from, s))
          && (until == null || step < resolve(until, s));
    }

    private static long resolve(double v, SparsitySchedule s) {
      if (s.getBoundaryUnit() == SparsitySchedule.BoundaryUnit.FRACTION) {
        if (s.getTotalSteps() <= 0) {
          throw new IllegalStateException(
              "attention rule windows in FRACTION units need the run length;"
                  + " call withTotalSteps(n) first");
        }
        return Math.round(v * s.getTotalSteps());
      }
      return (long) v;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Rule
          && Objects.equals(((Rule) o).phases, phases)
          && Objects.equals(((Rule) o).layers, layers)
          && Objects.equals(((Rule) o).pattern, pattern)
          && Objects.equals(((Rule) o).from, from)
          && Objects.equals(((Rule) o).until, until);
    }

    @Override
    public int hashCode() {
      return Objects.hash(phases, layers, pattern, from, until);
    }
  }

  private String defaultPattern = "dense";
  private int blockSize = 16;
  private List<Rule> rules = new ArrayList<>();

  public AttentionSchedule() {}

  /** Dense attention everywhere. */
  public static AttentionSchedule dense() {
    return new AttentionSchedule();
  }

  /**
   * The authors' HSA: one sparse pattern for all layers during ultra-sparsification, dense
   * otherwise.
   */
  public static AttentionSchedule sparseInUltra(String pattern) {
    AttentionSchedule a = new AttentionSchedule();
    a.rules.add(new Rule(List.of(Phase.ULTRA), "all", pattern));
    return a.validate();
  }

  public AttentionSchedule validate() {
    if (blockSize < 1) {
      throw Args.bad("attention.blockSize", blockSize, "an integer >= 1");
    }
    AttentionDensity.check("attention.defaultPattern", defaultPattern);
    for (int i = 0; i < rules.size(); i++) {
      Rule r = rules.get(i);
      AttentionDensity.check("attention.rules[" + i + "].pattern", r.pattern);
      layerMatches(r.layers, 0); // throws on bad syntax
      checkBound("attention.rules[" + i + "].from", r.from);
      checkBound("attention.rules[" + i + "].until", r.until);
      if (r.from != null && r.until != null && r.until < r.from) {
        throw new IllegalArgumentException(
            "attention.rules["
                + i
                + "]: until = "
                + r.until
                + " < from = "
                + r.from
                + "; required from <= until");
      }
    }
    return this;
  }

  private static void checkBound(String name, Double v) {
    if (v != null && (!(v >= 0) || Double.isInfinite(v))) {
      throw Args.bad(
          name,
          v,
          "a non-negative number (a fraction of the run or a step, in the schedule's"
              + " boundary unit) or absent");
    }
  }

  /** Checks rule windows against a schedule's unit (fractions must be <= 1). */
  public AttentionSchedule validateAgainst(SparsitySchedule s) {
    validate();
    if (s.getBoundaryUnit() == SparsitySchedule.BoundaryUnit.FRACTION) {
      for (int i = 0; i < rules.size(); i++) {
        Rule r = rules.get(i);
        for (Double v : new Double[] {r.from, r.until}) {
          if (v != null && v > 1.0) {
            throw Args.bad(
                "attention.rules[" + i + "] window bound",
                v,
                "a fraction of the run in [0, 1] (schedule boundaryUnit = FRACTION)");
          }
        }
      }
    }
    return this;
  }

  /**
   * Pattern of a layer at a (0-based) step of a run with schedule {@code s}: phase and rule
   * windows.
   */
  public String patternFor(int layer, long step, SparsitySchedule s) {
    Phase phase = s.phaseAt(Math.min(step, Math.max(0, s.getTotalSteps() - 1)));
    for (Rule r : rules) {
      if (r.matches(layer, phase) && r.inWindow(step, s)) {
        return r.pattern;
      }
    }
    return defaultPattern;
  }

  static boolean layerMatches(String sel, int layer) {
    String allowed = "\"all\", a list like \"0,2\", or \"every:N\" / \"every:N/K\"";
    if (sel == null) {
      throw Args.bad("attention rule layers", null, allowed);
    }
    String s = sel.trim().toLowerCase(Locale.ROOT);
    try {
      if (s.equals("all")) {
        return true;
      }
      if (s.startsWith("every:")) {
        String[] p = s.substring(6).split("/");
        int n = Integer.parseInt(p[0].trim());
        int k = p.length > 1 ? Integer.parseInt(p[1].trim()) : 0;
        if (n < 1 || k < 0 || k >= n) {
          throw Args.bad("attention rule layers", sel, allowed + " with N >= 1 and 0 <= K < N");
        }
        return layer % n == k;
      }
      for (String t : s.split(",")) {
        if (Integer.parseInt(t.trim()) == layer) {
          return true;
        }
      }
      return false;
    } catch (NumberFormatException e) {
      throw Args.bad("attention rule layers", sel, allowed);
    }
  }

  public String getDefaultPattern() {
    return defaultPattern;
  }

  public void setDefaultPattern(String v) {
    defaultPattern = v;
  }

  public int getBlockSize() {
    return blockSize;
  }

  public void setBlockSize(int v) {
    blockSize = v;
  }

  public List<Rule> getRules() {
    return rules;
  }

  public void setRules(List<Rule> v) {
    rules = v;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AttentionSchedule
        && Objects.equals(((AttentionSchedule) o).defaultPattern, defaultPattern)
        && ((AttentionSchedule) o).blockSize == blockSize
        && Objects.equals(((AttentionSchedule) o).rules, rules);
  }

  @Override
  public int hashCode() {
    return Objects.hash(defaultPattern, blockSize, rules);
  }
}
