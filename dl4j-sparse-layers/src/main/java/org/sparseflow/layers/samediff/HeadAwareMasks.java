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
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.layers.samediff.LinearOps.Use;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Makes the masks of an attention's projections respect head boundaries. Q = x Wq is split into
 * heads by columns of Wq (reshape [B, T, H, D]); a head's scores are zero when no column of its
 * slice is kept in both Wq and Wk, and the head's output is zero when its slice of Wv's columns or
 * Wo's rows is empty; then Wq and Wk of that head get exactly zero gradient for the whole run. For
 * every head this guarantees a unit column (a block column for block patterns) kept in both Wq and
 * Wk, a kept unit in Wv's head columns and in Wo's head rows. A missing unit is moved from the
 * fullest other column of the same matrix (same row, so the density is unchanged), or added when no
 * column has a unit to spare.
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
    int b;
    if (spec.getKind() == MaskPattern.Kind.BLOCK) {
      b = spec.getBlockSize();
    } else if (spec.getKind() == MaskPattern.Kind.NM) {
      return notes; // n:m keeps n of every m inputs for every output column: no column is empty
    } else {
      b = 1;
    }
    for (AttentionSite s : sites) {
      Use q = projection(sd, uses, s.q()), k = projection(sd, uses, s.k());
      Use v = projection(sd, uses, s.v());
      Use o = outputProjection(sd, uses, s.out());
      int[] hd = heads(sd, s.q());
      if (hd == null || q == null || k == null) {
        continue;
      }
      int h = hd[0], d = hd[1];
      if (d % b != 0) {
        continue;
      }
      INDArray mq = view(masks, q, false), mk = view(masks, k, false);
      INDArray mv = view(masks, v, false), mo = view(masks, o, true);
      int added = 0, moved = 0;
      for (int head = 0; head < h; head++) {
        int c0 = head * d / b, c1 = (head + 1) * d / b;
        if (mq != null || mk != null) {
          int[] r = overlap(mq, mk, b, c0, c1);
          added += r[0];
          moved += r[1];
        }
        for (INDArray m : new INDArray[] {mv, mo}) {
          if (m != null && units(m, b, c0, c1) == 0) {
            int[] r = ensure(m, b, c0);
            added += r[0];
            moved += r[1];
          }
        }
      }
      if (added + moved > 0) {
        String note =
            "head-aware masks: moved "
                + moved
                + " and added "
                + added
                + " unit(s) so each of "
                + h
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

  /** Ensures a unit column in [c0, c1) kept in both q and k (either may be null = dense). */
  private static int[] overlap(INDArray q, INDArray k, int b, int c0, int c1) {
    int best = c0, bestScore = -1;
    for (int c = c0; c < c1; c++) {
      int nq = q == null ? 1 : units(q, b, c, c + 1), nk = k == null ? 1 : units(k, b, c, c + 1);
      if (nq > 0 && nk > 0) {
        return new int[] {0, 0};
      }
      if (nq + nk > bestScore) {
        bestScore = nq + nk;
        best = c;
      }
    }
    int[] r = {0, 0};
    for (INDArray m : new INDArray[] {q, k}) {
      if (m != null && units(m, b, best, best + 1) == 0) {
        int[] e = ensure(m, b, best);
        r[0] += e[0];
        r[1] += e[1];
      }
    }
    return r;
  }

  /** Puts one kept unit into unit column {@code c}; returns {added, moved}. */
  private static int[] ensure(INDArray m, int b, int c) {
    int cols = (int) (m.size(1) / b), rows = (int) (m.size(0) / b);
    int donor = -1, most = 1;
    for (int j = 0; j < cols; j++) {
      int n = units(m, b, j, j + 1);
      if (j != c && n > most) {
        most = n;
        donor = j;
      }
    }
    if (donor < 0) {
      set(m, b, 0, c, 1.0);
      return new int[] {1, 0};
    }
    for (int r = 0; r < rows; r++) {
      if (kept(m, b, r, donor)) {
        set(m, b, r, donor, 0.0);
        set(m, b, r, c, 1.0);
        break;
      }
    }
    return new int[] {0, 1};
  }

  private static int units(INDArray m, int b, int c0, int c1) {
    int n = 0;
    for (int r = 0; r < m.size(0) / b; r++) {
      for (int c = c0; c < c1; c++) {
        n += kept(m, b, r, c) ? 1 : 0;
      }
    }
    return n;
  }

  private static boolean kept(INDArray m, int b, int r, int c) {
    return m.getDouble((long) r * b, (long) c * b) != 0.0;
  }

  private static void set(INDArray m, int b, int r, int c, double v) {
    m.get(
            NDArrayIndex.interval((long) r * b, (long) (r + 1) * b),
            NDArrayIndex.interval((long) c * b, (long) (c + 1) * b))
        .assign(v);
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
