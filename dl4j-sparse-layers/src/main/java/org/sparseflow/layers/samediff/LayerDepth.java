package org.sparseflow.layers.samediff;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;

/**
 * Depth of linear layers from the graph inputs, for {@code keepFirstDense} / {@code keepLastDense}.
 * The depth of a variable is the largest number of linear-layer ops (the ops in {@code layerOps}:
 * matmuls, {@code xw_plus_b}, tensordots with a trainable weight) on any path from a graph input
 * (placeholder, variable or constant) to it; the depth of a layer op is one more than the largest
 * depth of its inputs. Other ops (activations, attention scores, reshapes, adds) do not count, so
 * Q, K and V projections of one block share a depth, and a residual connection does not make a
 * layer shallower. Op order in the graph plays no part.
 */
final class LayerDepth {
  private final SameDiff sd;
  private final Set<String> layerOps;
  private final Map<String, Integer> memo = new HashMap<>();

  private LayerDepth(SameDiff sd, Set<String> layerOps) {
    this.sd = sd;
    this.layerOps = layerOps;
  }

  /** Depth (>= 1) of each op in {@code layerOps}, keyed by op name. */
  static Map<String, Integer> of(SameDiff sd, Set<String> layerOps) {
    LayerDepth d = new LayerDepth(sd, new HashSet<>(layerOps));
    Map<String, Integer> out = new HashMap<>();
    for (String op : layerOps) {
      out.put(op, d.opDepth(sd.getOps().get(op)));
    }
    return out;
  }

  private int opDepth(SameDiffOp op) {
    int max = 0;
    List<String> in = op.getInputsToOp();
    if (in != null) {
      for (String v : in) {
        max = Math.max(max, varDepth(v));
      }
    }
    return max + (layerOps.contains(op.getName()) ? 1 : 0);
  }

  /** Depth of a variable, memoised; recurses on producers (graphs of a few thousand ops). */
  private int varDepth(String var) {
    Integer known = memo.get(var);
    if (known != null) {
      return known;
    }
    memo.put(var, 0); // cycle guard (graphs are acyclic; control edges are not followed)
    Variable v = sd.getVariables().get(var);
    int d = 0;
    if (v != null && v.getOutputOfOp() != null) {
      SameDiffOp p = sd.getOps().get(v.getOutputOfOp());
      if (p != null) {
        d = opDepth(p);
      }
    }
    memo.put(var, d);
    return d;
  }
}
