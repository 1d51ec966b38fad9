package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ops.impl.reduce.Mmul;
import org.nd4j.linalg.api.ops.impl.transforms.custom.XwPlusB;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;

/**
 * The linear-layer ops {@link SameDiffSparsifier} rewrites: {@code mmul(x, W)} and {@code
 * xw_plus_b(x, W, b)} ({@code sd.nn.linear}), with W a trainable rank-2 variable as the second
 * input; and the report lines for trainable rank-2 weights no rewrite looked at.
 */
final class LinearOps {

  private LinearOps() {}

  /** mmul or xw_plus_b with the weight as second input (and, for xw_plus_b, a bias third). */
  static boolean isLinear(SameDiffOp op) {
    List<String> in = op.getInputsToOp();
    if (in == null) {
      return false;
    }
    if (op.getOp() instanceof Mmul) {
      return in.size() == 2;
    }
    return op.getOp() instanceof XwPlusB && in.size() == 3;
  }

  /** Report name of the op kind: "matmul" or "xw_plus_b". */
  static String kind(SameDiffOp op) {
    return op.getOp() instanceof XwPlusB ? "xw_plus_b" : "matmul";
  }

  /** The bias of an xw_plus_b, else null. */
  static SDVariable bias(SameDiff sd, SameDiffOp op) {
    return op.getOp() instanceof XwPlusB ? sd.getVariable(op.getInputsToOp().get(2)) : null;
  }

  /**
   * One DENSE entry for every trainable rank-2 weight not in {@code reported}, naming the ops that
   * use it, so every such weight appears in the report.
   */
  static List<Entry> unaccounted(SameDiff sd, Set<String> reported) {
    List<Entry> out = new ArrayList<>();
    for (SDVariable v : sd.variables()) {
      long[] shape = v.getShape();
      if (v.getVariableType() != VariableType.VARIABLE
          || shape == null
          || shape.length != 2
          || reported.contains(v.name())) {
        continue;
      }
      List<String> users = new ArrayList<>();
      List<String> ops = sd.getVariables().get(v.name()).getInputsForOp();
      if (ops != null) {
        for (String o : ops) {
          users.add(o + " (" + sd.getOps().get(o).getOp().opName() + ")");
        }
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
              users.isEmpty()
                  ? "not used by any op"
                  : "not the weight of a matmul / linear layer; used by "
                      + String.join(", ", users)));
    }
    return out;
  }
}
