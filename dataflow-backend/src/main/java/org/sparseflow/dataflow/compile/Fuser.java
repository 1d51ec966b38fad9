package org.sparseflow.dataflow.compile;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;

/**
 * Groups ops into fused kernels with data-driven {@link FusionRule}s. Every op ends up in exactly
 * one kernel; kernels keep execution order and never cross phase (forward/backward/optimizer)
 * boundaries.
 */
public final class Fuser {
  private final List<FusionRule> rules;

  public Fuser(List<FusionRule> rules) {
    this.rules = List.copyOf(rules);
  }

  public static Fuser withBuiltinRules() {
    return new Fuser(FusionRules.builtin());
  }

  /** No fusion: every op its own kernel (kernel-by-kernel execution). */
  public static List<FusedKernel> unfused(OpGraph g) {
    List<FusedKernel> out = new ArrayList<>();
    for (OpNode op : g.ops()) {
      out.add(new FusedKernel(out.size(), "single", List.of(op)));
    }
    return out;
  }

  public List<FusedKernel> fuse(OpGraph g) {
    List<OpNode> ops = g.ops();
    List<FusedKernel> out = new ArrayList<>();
    int i = 0;
    while (i < ops.size()) {
      List<OpNode> best = null;
      String bestRule = "single";
      for (FusionRule r : rules) {
        List<OpNode> m = match(r, ops, i);
        if (m != null && m.size() >= 2) {
          best = m;
          bestRule = r.name();
          break;
        }
      }
      if (best == null) {
        best = List.of(ops.get(i));
      }
      out.add(new FusedKernel(out.size(), bestRule, best));
      i += best.size();
    }
    return out;
  }

  /**
   * Greedy match of a rule on consecutive ops starting at index start; null if it does not match.
   */
  private static List<OpNode> match(FusionRule rule, List<OpNode> ops, int start) {
    List<OpNode> group = new ArrayList<>();
    Set<Integer> produced = new HashSet<>();
    Set<Integer> readActivations = new HashSet<>();
    Phase phase = ops.get(start).phase();
    int pos = start;
    for (FusionRule.Step step : rule.steps()) {
      int count = 0;
      while (count < step.max() && pos < ops.size()) {
        OpNode op = ops.get(pos);
        if (op.phase() != phase || !step.matches(op)) {
          break;
        }
        if (!group.isEmpty() && rule.connected() && !connected(op, produced, readActivations)) {
          break;
        }
        group.add(op);
        for (Tensor t : op.outputs()) {
          produced.add(t.id());
        }
        for (Tensor t : op.inputs()) {
          if (t.kind() == TensorKind.ACTIVATION) {
            readActivations.add(t.id());
          }
        }
        pos++;
        count++;
      }
      if (count < step.min()) {
        return null;
      }
    }
    return group.isEmpty() ? null : group;
  }

  private static boolean connected(OpNode op, Set<Integer> produced, Set<Integer> readActivations) {
    for (Tensor t : op.inputs()) {
      if (produced.contains(t.id()) || readActivations.contains(t.id())) {
        return true;
      }
    }
    return false;
  }
}
