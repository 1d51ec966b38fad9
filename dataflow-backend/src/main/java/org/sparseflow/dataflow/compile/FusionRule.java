package org.sparseflow.dataflow.compile;

import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;

/** One fusion rule: a named sequence of steps matched against consecutive connected ops. */
public final class FusionRule {

  /**
   * One step: op kinds (any of) and optional op-name regexes (any of), with a repeat quantifier.
   */
  public record Step(Set<OpKind> kinds, List<Pattern> names, char repeat) {
    public Step {
      if (kinds.isEmpty()) {
        throw new IllegalArgumentException("a fusion step needs at least one kind");
      }
      if ("1?*+".indexOf(repeat) < 0) {
        throw new IllegalArgumentException(
            "repeat must be one of 1, ?, *, + ; got '" + repeat + "'");
      }
      kinds = EnumSet.copyOf(kinds);
      names = List.copyOf(names);
    }

    boolean matches(OpNode op) {
      if (!kinds.contains(op.kind())) {
        return false;
      }
      if (names.isEmpty()) {
        return true;
      }
      for (Pattern p : names) {
        if (p.matcher(op.opName()).matches()) {
          return true;
        }
      }
      return false;
    }

    int min() {
      return repeat == '1' || repeat == '+' ? 1 : 0;
    }

    int max() {
      return repeat == '1' || repeat == '?' ? 1 : Integer.MAX_VALUE;
    }
  }

  private final String name;
  private final String description;
  private final boolean connected;
  private final List<Step> steps;

  public FusionRule(String name, String description, boolean connected, List<Step> steps) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("fusion rule name must be non-empty");
    }
    if (steps.isEmpty()) {
      throw new IllegalArgumentException("fusion rule '" + name + "' has no steps");
    }
    this.name = name;
    this.description = description == null ? "" : description;
    this.connected = connected;
    this.steps = List.copyOf(steps);
  }

  public String name() {
    return name;
  }

  public String description() {
    return description;
  }

  public boolean connected() {
    return connected;
  }

  public List<Step> steps() {
    return steps;
  }
}
