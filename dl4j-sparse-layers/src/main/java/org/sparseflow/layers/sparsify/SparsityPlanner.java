package org.sparseflow.layers.sparsify;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Decides which weight-carrying elements of a model become sparse and at which density:
 * include/exclude regexes, first/last element kept dense, per-tensor density allocation
 * (UNIFORM/ER/ERK, see {@link org.sparseflow.layers.config.DensityDistribution}) and the fit of the
 * pattern to every shape. Shared by the DL4J and the SameDiff paths.
 */
public final class SparsityPlanner {
  private SparsityPlanner() {}

  /**
   * One candidate in topological order.
   *
   * @param name element name (layer / vertex / SameDiff weight variable)
   * @param matchNames names the regexes are tried on (the element name and its parameter names)
   * @param shapes maskable weights: key -> shape [rows, cols]
   */
  public record Item(String name, List<String> matchNames, Map<String, long[]> shapes) {
    long numel() {
      long n = 0;
      for (long[] s : shapes.values()) {
        n += s[0] * s[1];
      }
      return n;
    }
  }

  /** Outcome for one item; {@code density} is the numel-weighted mean over its tensors. */
  public record Decision(boolean sparse, double density, String reason) {}

  /**
   * @param allNames every layer and parameter name of the model, used to reject include regexes
   *     that match nothing
   */
  public static Map<String, Decision> plan(
      SparsityConfig cfg, List<Item> items, List<String> allNames) {
    Set<String> first = items.isEmpty() ? Set.of() : Set.of(items.get(0).name());
    Set<String> last = items.isEmpty() ? Set.of() : Set.of(items.get(items.size() - 1).name());
    return plan(cfg, items, allNames, first, last, "");
  }

  /**
   * As {@link #plan(SparsityConfig, List, List)}, with the elements {@code keepFirstDense} and
   * {@code keepLastDense} keep dense given by the caller (e.g. all weights at the smallest and at
   * the largest depth of a graph); {@code endsNote} is appended to their reasons.
   */
  public static Map<String, Decision> plan(
      SparsityConfig cfg,
      List<Item> items,
      List<String> allNames,
      Set<String> first,
      Set<String> last,
      String endsNote) {
    checkIncludesMatch(cfg, allNames);
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    Map<String, Decision> out = new LinkedHashMap<>();
    List<Item> selected = new ArrayList<>();
    for (int i = 0; i < items.size(); i++) {
      Item it = items.get(i);
      String reason = null;
      if (it.matchNames().stream().noneMatch(cfg::included)) {
        reason = "not matched by include " + cfg.getInclude();
      } else {
        for (String n : it.matchNames()) {
          String by = cfg.excludedBy(n);
          if (by != null) {
            reason = "excluded: '" + n + "' matches exclude '" + by + "'";
            break;
          }
        }
      }
      if (reason == null && first.contains(it.name()) && cfg.isKeepFirstDense()) {
        reason = "first layer kept dense (keepFirstDense)" + endsNote;
      }
      if (reason == null && last.contains(it.name()) && cfg.isKeepLastDense()) {
        reason = "last layer kept dense (keepLastDense)" + endsNote;
      }
      if (reason != null) {
        out.put(it.name(), new Decision(false, 1.0, reason));
      } else {
        selected.add(it);
        out.put(it.name(), null);
      }
    }
    // the pattern must fit every selected tensor
    for (Item it : selected) {
      for (Map.Entry<String, long[]> e : it.shapes().entrySet()) {
        try {
          spec.checkShape(e.getValue()[0], e.getValue()[1]);
        } catch (IllegalArgumentException ex) {
          throw new IllegalArgumentException(
              "Sparsity config: pattern '"
                  + cfg.getPattern()
                  + "' does not fit layer '"
                  + it.name()
                  + "' weight '"
                  + e.getKey()
                  + "' of shape "
                  + Arrays.toString(e.getValue())
                  + ": "
                  + ex.getMessage()
                  + "; exclude the layer or choose a pattern whose block/group divides the shape",
              ex);
        }
      }
    }
    if (spec.getKind() == MaskPattern.Kind.NM) {
      double d = (double) spec.getN() / spec.getM();
      for (Item it : selected) {
        out.put(
            it.name(), new Decision(true, d, "N:M pattern fixes the density at n/m = " + fmt(d)));
      }
      return out;
    }
    Map<String, long[]> tensors = new LinkedHashMap<>();
    for (Item it : selected) {
      for (Map.Entry<String, long[]> e : it.shapes().entrySet()) {
        tensors.put(it.name() + "\u0000" + e.getKey(), e.getValue());
      }
    }
    Map<String, Double> dens =
        tensors.isEmpty() ? Map.of() : cfg.getDistribution().allocate(tensors, cfg.targetDensity());
    for (Item it : selected) {
      double kept = 0, n = 0;
      for (Map.Entry<String, long[]> e : it.shapes().entrySet()) {
        double numel = (double) e.getValue()[0] * e.getValue()[1];
        kept += numel * dens.get(it.name() + "\u0000" + e.getKey());
        n += numel;
      }
      double d = n == 0 ? 1.0 : kept / n;
      if (d >= 1.0 - 1e-12) {
        out.put(
            it.name(),
            new Decision(
                false,
                1.0,
                cfg.getDistribution() + " dense fallback: this layer's density would exceed 1"));
      } else {
        out.put(it.name(), new Decision(true, d, cfg.getDistribution() + " allocation"));
      }
    }
    return out;
  }

  static void checkIncludesMatch(SparsityConfig cfg, List<String> allNames) {
    List<String> inc = cfg.getInclude();
    for (int i = 0; i < inc.size(); i++) {
      Pattern p = Pattern.compile(inc.get(i));
      if (allNames.stream().noneMatch(n -> p.matcher(n).matches())) {
        List<String> shown = allNames.size() > 40 ? allNames.subList(0, 40) : allNames;
        throw new IllegalArgumentException(
            "Sparsity config: include["
                + i
                + "] = '"
                + inc.get(i)
                + "' matches no layer or parameter name; allowed: a regex matching one of "
                + shown
                + (allNames.size() > 40 ? " ... (" + allNames.size() + " names)" : ""));
      }
    }
  }

  static String fmt(double d) {
    return String.format(Locale.ROOT, "%.4f", d);
  }
}
