package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.BaseScalarOp;
import org.nd4j.linalg.api.ops.BaseTransformOp;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.impl.reduce.Mmul;
import org.nd4j.linalg.api.ops.impl.reduce.TensorMmul;
import org.nd4j.linalg.api.ops.impl.shape.Gather;
import org.nd4j.linalg.api.ops.impl.shape.Reshape;
import org.nd4j.linalg.api.ops.impl.transforms.BaseDynamicTransformOp;
import org.nd4j.linalg.api.ops.impl.transforms.custom.XwPlusB;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.PackedMatmulOp;

/**
 * The ops {@link SameDiffSparsifier} understands as uses of a trainable rank-2 weight W, and the
 * report lines for weights no rewrite looked at:
 *
 * <ul>
 *   <li>{@code mmul(x, W)} with any transpose flags ({@code transposeB} is x·Wᵀ with W stored as
 *       [out, in], as PyTorch-style code writes it; {@code transposeA}/{@code transposeResult} need
 *       a rank-2 activation);
 *   <li>{@code xw_plus_b(x, W, b)} ({@code sd.nn.linear});
 *   <li>{@code tensordot(x, W)} contracting the last axis of a rank-3 (or higher) activation [B, T,
 *       in] with axis 0 of W (or axis 1: x·Wᵀ), the batched form of a linear layer, since ND4J's
 *       matmul does not broadcast a rank-2 weight over a batch;
 *   <li>{@code gather(W, ids, 0)}, an embedding lookup: a weight read both by a lookup and by a
 *       linear use is a tied embedding.
 * </ul>
 */
final class LinearOps {

  private LinearOps() {}

  /** How an op uses the weight. */
  enum Kind {
    MATMUL,
    XW_PLUS_B,
    TENSORDOT,
    GATHER,
    OTHER
  }

  /**
   * One use of weight {@code w} by {@code op}. For linear kinds the op computes {@code op(x)
   * op(W)}, transposed when {@code transR}; {@code problem} is non-null when the use is recognised
   * but cannot be rewritten.
   */
  record Use(
      SameDiffOp op,
      String w,
      Kind kind,
      boolean transA,
      boolean transB,
      boolean transR,
      String problem) {
    boolean linear() {
      return kind == Kind.MATMUL || kind == Kind.XW_PLUS_B || kind == Kind.TENSORDOT;
    }

    String x() {
      return op.getInputsToOp().get(0);
    }

    String describe() {
      String flags =
          (transA ? " transposeA" : "") + (transB ? " transposeB" : "") + (transR ? " tR" : "");
      return op.getName() + " (" + op.getOp().opName() + flags + ")";
    }
  }

  /** Whether {@code v} is a trainable rank-2 variable. */
  static boolean isWeight(SDVariable v) {
    long[] s = v == null ? null : v.getShape();
    return v != null && v.getVariableType() == VariableType.VARIABLE && s != null && s.length == 2;
  }

  /** Classifies how {@code op} uses weight {@code w} (one of its inputs). */
  static Use classify(SameDiff sd, SameDiffOp op, String w) {
    List<String> in = op.getInputsToOp();
    Object f = op.getOp();
    long[] ia = f instanceof CustomOp c ? c.iArgs() : new long[0];
    if (f instanceof Mmul && in.size() == 2) {
      if (!in.get(1).equals(w) || in.get(0).equals(w)) {
        return other(
            op, w, "the weight is the left operand (W·x); only x·W and x·Wᵀ are rewritten");
      }
      boolean ta = flag(ia, 0), tb = flag(ia, 1), tr = flag(ia, 2);
      double[] ta2 = ((CustomOp) f).tArgs();
      String problem = null;
      if (ta2 != null && ta2.length > 0 && (ta2[0] != 1.0 || (ta2.length > 1 && ta2[1] != 0.0))) {
        problem = "scaled matmul (alpha/beta " + Arrays.toString(ta2) + ")";
      } else if ((ta || tr) && rank(sd, in.get(0)) != 2) {
        problem = "transposeA/transposeResult on an activation whose rank is not statically 2";
      }
      return new Use(op, w, Kind.MATMUL, ta, tb, tr, problem);
    }
    if (f instanceof XwPlusB && in.size() == 3 && in.get(1).equals(w)) {
      return new Use(op, w, Kind.XW_PLUS_B, false, flag(ia, 0), false, null);
    }
    if (f instanceof TensorMmul && in.size() == 2 && in.get(1).equals(w)) {
      int r = rank(sd, in.get(0));
      boolean lastAxis =
          ia != null
              && ia.length == 4
              && ia[0] == 1
              && ia[2] == 1
              && (ia[1] == -1 || ia[1] == r - 1);
      if (!lastAxis || r < 2 || (ia[3] != 0 && ia[3] != 1)) {
        return other(op, w, "tensordot that does not contract the activation's last axis with W");
      }
      return new Use(op, w, Kind.TENSORDOT, false, ia[3] == 1, false, null);
    }
    if (f instanceof Gather
        && in.get(0).equals(w)
        && (ia == null || ia.length == 0 || ia[0] == 0)) {
      return new Use(op, w, Kind.GATHER, false, false, false, null);
    }
    return other(op, w, "also used by '" + op.getName() + "' (" + op.getOp().opName() + ")");
  }

  private static Use other(SameDiffOp op, String w, String why) {
    return new Use(op, w, Kind.OTHER, false, false, false, why);
  }

  private static boolean flag(long[] ia, int i) {
    return ia != null && ia.length > i && ia[i] != 0;
  }

  /**
   * Static rank of a variable, -1 when unknown: its shape when SameDiff knows it, else inferred
   * from its producer (reshape target, matmul / tensordot operands, shape-preserving ops).
   */
  static int rank(SameDiff sd, String var) {
    return rank(sd, var, 0);
  }

  private static int rank(SameDiff sd, String var, int depth) {
    SDVariable v = sd.getVariable(var);
    long[] s = v == null ? null : v.getShape();
    if (s != null) {
      return s.length;
    }
    SameDiffOp p = GraphEdits.producer(sd, var);
    if (p == null || depth > 16 || p.getInputsToOp() == null || p.getInputsToOp().isEmpty()) {
      return -1;
    }
    Object f = p.getOp();
    List<String> in = p.getInputsToOp();
    if (f instanceof Reshape) {
      long[] t = reshapeTarget(sd, p);
      return t == null ? -1 : t.length;
    }
    if (f instanceof Mmul || f instanceof XwPlusB) {
      return rank(sd, in.get(0), depth + 1);
    }
    if (f instanceof TensorMmul && in.size() == 2) {
      long[] ia = ((CustomOp) f).iArgs();
      int a = rank(sd, in.get(0), depth + 1), b = rank(sd, in.get(1), depth + 1);
      return a < 0 || b < 0 || ia == null || ia.length == 0 ? -1 : a + b - 2 * (int) ia[0];
    }
    if (f instanceof BaseTransformOp || f instanceof BaseScalarOp) {
      return rank(sd, in.get(0), depth + 1);
    }
    if (f instanceof BaseDynamicTransformOp) { // broadcasting add/sub/mul/div
      int r = -1;
      for (String i : in) {
        r = Math.max(r, rank(sd, i, depth + 1));
      }
      return r;
    }
    return -1;
  }

  /** Target shape of a reshape op (constant shape input or iArgs), or null. */
  static long[] reshapeTarget(SameDiff sd, SameDiffOp reshape) {
    long[] ia = ((CustomOp) reshape.getOp()).iArgs();
    if (reshape.getInputsToOp().size() > 1) {
      INDArray shape = sd.getArrForVarName(reshape.getInputsToOp().get(1));
      return shape == null ? null : shape.toLongVector();
    }
    if (ia != null && ia.length > 1) {
      // iArgs may start with the order character ('c' = 99, 'f' = 102, or negated) first
      long o = Math.abs(ia[0]);
      return o == 99 || o == 102 ? Arrays.copyOfRange(ia, 1, ia.length) : ia;
    }
    return null;
  }

  /** Report name of a weight's kind: "matmul", "xw_plus_b", "tensordot" or "tied embedding". */
  static String kind(List<Use> uses) {
    boolean tied = uses.stream().anyMatch(u -> u.kind() == Kind.GATHER);
    if (tied) {
      return "tied embedding";
    }
    Use first = uses.stream().filter(Use::linear).findFirst().orElse(uses.get(0));
    return first.op().getOp().opName() + (first.transB() ? " (x·Wᵀ)" : "");
  }

  /**
   * One DENSE entry for every trainable rank-2 weight not in {@code reported}, naming the ops that
   * use it, so every such weight appears in the report.
   */
  /** Whether {@code name} is the kept-block values of packed matmuls (reported under W's name). */
  private static boolean packedValues(SameDiff sd, String name) {
    List<String> ops = sd.getVariables().get(name).getInputsForOp();
    if (ops == null || ops.isEmpty()) {
      return false;
    }
    for (String o : ops) {
      SameDiffOp op = sd.getOps().get(o);
      if (!(op.getOp() instanceof PackedMatmulOp) || !name.equals(op.getInputsToOp().get(1))) {
        return false;
      }
    }
    return true;
  }

  static List<Entry> unaccounted(SameDiff sd, Set<String> reported) {
    List<Entry> out = new ArrayList<>();
    for (SDVariable v : sd.variables()) {
      if (!isWeight(v) || reported.contains(v.name()) || packedValues(sd, v.name())) {
        continue;
      }
      long[] shape = v.getShape();
      List<String> users = new ArrayList<>();
      List<String> ops = sd.getVariables().get(v.name()).getInputsForOp();
      boolean lookup = false;
      if (ops != null) {
        for (String o : ops) {
          SameDiffOp op = sd.getOps().get(o);
          users.add(o + " (" + op.getOp().opName() + ")");
          lookup |= classify(sd, op, v.name()).kind() == Kind.GATHER;
        }
      }
      String why;
      if (users.isEmpty()) {
        why = "not used by any op";
      } else if (lookup && allGather(sd, ops, v.name())) {
        why = "embedding table (lookup only, not tied to a linear layer); used by " + users;
      } else {
        why = "not the weight of a matmul / linear layer; used by " + String.join(", ", users);
      }
      out.add(
          new Entry(
              v.name(),
              "weight",
              "weight",
              Status.DENSE,
              null,
              1.0,
              Double.NaN,
              null,
              shape[0] * shape[1],
              why));
    }
    return out;
  }

  private static boolean allGather(SameDiff sd, List<String> ops, String w) {
    return ops.stream().allMatch(o -> classify(sd, sd.getOps().get(o), w).kind() == Kind.GATHER);
  }
}
