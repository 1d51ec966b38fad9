package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.broadcast.BiasAdd;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarDivision;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarMultiplication;
import org.nd4j.linalg.api.ops.impl.shape.Permute;
import org.nd4j.linalg.api.ops.impl.shape.Reshape;
import org.nd4j.linalg.api.ops.impl.shape.Transpose;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;
import org.sparseflow.layers.nn.HeadMasks;
import org.sparseflow.layers.samediff.LinearOps.Use;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Head-aware masks for the attentions of a SameDiff graph: traces each recognised attention's Q, K
 * and V back to their linear projections (through reshape / permute / scale / bias add), its output
 * forward to the output projection, reads the head count and size from the reshape that splits Q
 * into [.., H, D], and lets {@link HeadMasks} fix the masks (in the weights' effective [in, out]
 * orientation, so x·Wᵀ weights are handled through a transposed view).
 */
final class HeadAwareMasks {
  private HeadAwareMasks() {}

  /** Adjusts {@code masks} (weight -> 0/1 array of the weight's shape); returns notes "w: ...". */
  static List<String> adjust(
      SameDiff sd,
      List<AttentionSite> sites,
      Map<String, List<Use>> uses,
      Map<String, INDArray> masks,
      PatternSpec spec) {
    List<String> notes = new ArrayList<>();
    int unit = HeadMasks.unit(spec);
    if (unit == 0) {
      return notes;
    }
    for (AttentionSite s : sites) {
      Use q = projection(sd, uses, s.q()), k = projection(sd, uses, s.k());
      Use v = projection(sd, uses, s.v());
      Use o = outputProjection(sd, uses, s.out());
      int[] hd = heads(sd, s.q());
      if (hd == null || q == null || k == null) {
        continue;
      }
      int[] r =
          HeadMasks.adjust(
              view(masks, q, false),
              view(masks, k, false),
              view(masks, v, false),
              view(masks, o, true),
              hd[0],
              hd[1],
              unit);
      if (r[0] + r[1] > 0) {
        String note =
            "head-aware masks: moved "
                + r[1]
                + " and added "
                + r[0]
                + " unit(s) so each of "
                + hd[0]
                + " heads keeps a Q·Kᵀ, V and output unit";
        for (Use u : new Use[] {q, k, v, o}) {
          if (u != null && masks.containsKey(u.w())) {
            notes.add(u.w() + ": " + note);
          }
        }
      }
    }
    return notes;
  }

  /** Effective [in, out] (or, for {@code rows}, [out, in]) view of a use's mask: heads = cols. */
  private static INDArray view(Map<String, INDArray> masks, Use u, boolean rows) {
    if (u == null || !masks.containsKey(u.w())) {
      return null;
    }
    INDArray m = masks.get(u.w());
    boolean transposed = u.transB() != rows;
    return transposed ? m.transpose() : m;
  }

  /** Walks from an attention input back through reshape/permute/scale to its linear use. */
  private static Use projection(SameDiff sd, Map<String, List<Use>> uses, String var) {
    String cur = var;
    for (int step = 0; step < 8 && cur != null; step++) {
      SameDiffOp p = GraphEdits.producer(sd, cur);
      if (p == null) {
        return null;
      }
      Use u = linearUse(uses, p);
      if (u != null) {
        return u;
      }
      if (p.getOp() instanceof AddOp || p.getOp() instanceof BiasAdd) {
        cur = biasedInput(sd, p); // x W + b: follow the matmul side
      } else {
        cur = passThrough(p) ? p.getInputsToOp().get(0) : null;
      }
    }
    return null;
  }

  /** The input of a bias add that an op computes (not a variable or constant), or null. */
  private static String biasedInput(SameDiff sd, SameDiffOp add) {
    String found = null;
    for (String in : add.getInputsToOp()) {
      if (GraphEdits.producer(sd, in) != null) {
        if (found != null) {
          return null; // both computed: not a bias add
        }
        found = in;
      }
    }
    return found;
  }

  /** Walks from the attention output forward through permute/reshape to its linear use. */
  private static Use outputProjection(SameDiff sd, Map<String, List<Use>> uses, String var) {
    String cur = var;
    for (int step = 0; step < 6 && cur != null; step++) {
      SameDiffOp c = GraphEdits.soleConsumer(sd, cur);
      if (c == null) {
        return null;
      }
      Use u = linearUse(uses, c);
      if (u != null) {
        return u.x().equals(cur) ? u : null;
      }
      cur =
          passThrough(c) && c.getInputsToOp().get(0).equals(cur) ? c.getOutputsOfOp().get(0) : null;
    }
    return null;
  }

  private static boolean passThrough(SameDiffOp op) {
    Object f = op.getOp();
    return f instanceof Permute
        || f instanceof Transpose
        || f instanceof Reshape
        || f instanceof ScalarMultiplication
        || f instanceof ScalarDivision;
  }

  private static Use linearUse(Map<String, List<Use>> uses, SameDiffOp op) {
    for (List<Use> l : uses.values()) {
      for (Use u : l) {
        if (u.linear() && u.op() == op) {
          return u;
        }
      }
    }
    return null;
  }

  /** {H, D} from the reshape that splits Q into heads ([.., H, D] target), or null. */
  private static int[] heads(SameDiff sd, String q) {
    long[] s = sd.getVariable(q).getShape();
    if (s != null && s.length == 4 && s[1] > 0 && s[3] > 0) {
      return new int[] {(int) s[1], (int) s[3]};
    }
    String cur = q;
    for (int step = 0; step < 8 && cur != null; step++) {
      SameDiffOp p = GraphEdits.producer(sd, cur);
      if (p == null || !passThrough(p)) {
        return null;
      }
      if (p.getOp() instanceof Reshape) {
        long[] t = LinearOps.reshapeTarget(sd, p);
        return t == null || t.length < 2 || t[t.length - 1] <= 0 || t[t.length - 2] <= 0
            ? null
            : new int[] {(int) t[t.length - 2], (int) t[t.length - 1]};
      }
      cur = p.getInputsToOp().get(0);
    }
    return null;
  }
}
