package org.sparseflow.layers.samediff;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.BaseScalarOp;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.impl.controlflow.Select;
import org.nd4j.linalg.api.ops.impl.controlflow.Where;
import org.nd4j.linalg.api.ops.impl.controlflow.WhereNumpy;
import org.nd4j.linalg.api.ops.impl.reduce.Mmul;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarDivision;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarMultiplication;
import org.nd4j.linalg.api.ops.impl.shape.Permute;
import org.nd4j.linalg.api.ops.impl.transforms.custom.SoftMax;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;

/**
 * Recognises causal attention in a SameDiff graph, in the forms public code writes it:
 *
 * <pre>
 *   scores = matmul(Q, K, transposeB)  or  matmul(Q, permute(K, 0, 1, 3, 2))
 *   scale  = scores * s | scores / s   (or Q / K scaled by s before the matmul; or no scale)
 *   masked = scaled + mask            (additive: a constant causal bias, or a runtime value
 *                                      such as (mask - 1) * 1e10 from a placeholder)
 *          | where(cond, scaled, fill) (boolean select)
 *   out    = matmul(softmax(masked, last axis), V)
 * </pre>
 *
 * Only a constant causal [T, T] bias can be replaced by the sparse attention op (which applies its
 * own causal block pattern); every other recognised form comes back with a {@code problem}.
 */
final class AttentionMatcher {
  private AttentionMatcher() {}

  /** A recognised attention chain; {@code problem} != null when it cannot be replaced. */
  record Match(
      String q,
      String k,
      String v,
      String probs,
      String out,
      double scale,
      int t,
      List<SameDiffOp> chain,
      String problem) {
    AttentionSite site() {
      return new AttentionSite(q, k, v, out);
    }
  }

  static Match match(SameDiff sd, SameDiffOp smOp) {
    if (!(smOp.getOp() instanceof SoftMax)) {
      return null;
    }
    String probs = smOp.getOutputsOfOp().get(0);
    List<String> probsUses = sd.getVariables().get(probs).getInputsForOp();
    if (probsUses == null || probsUses.size() != 1) {
      return null;
    }
    SameDiffOp pv = sd.getOps().get(probsUses.get(0));
    if (!(pv.getOp() instanceof Mmul)
        || !GraphEdits.plainMatmul(pv)
        || !pv.getInputsToOp().get(0).equals(probs)) {
      return null;
    }
    List<SameDiffOp> chain = new ArrayList<>();
    SameDiffOp maskOp = GraphEdits.producer(sd, smOp.getInputsToOp().get(0));
    String maskVar = null, scoresIn = null, problem = null;
    boolean select = false;
    if (maskOp != null && maskOp.getOp() instanceof AddOp && maskOp.getInputsToOp().size() == 2) {
      for (String in : maskOp.getInputsToOp()) {
        if (scoresOf(sd, in) != null && scoresIn == null) {
          scoresIn = in;
        } else {
          maskVar = in;
        }
      }
    } else if (maskOp != null && isSelect(maskOp)) {
      select = true;
      for (String in : maskOp.getInputsToOp()) {
        if (scoresOf(sd, in) != null && scoresIn == null) {
          scoresIn = in;
        } else if (maskVar == null || runtimeSource(sd, maskVar) == null) {
          maskVar = in; // the condition, preferring a runtime value over a constant fill
        }
      }
    }
    if (scoresIn == null || maskVar == null) {
      return null; // no mask: not causal attention
    }
    chain.add(maskOp);
    double s = 1.0;
    SameDiffOp qk = GraphEdits.producer(sd, scoresIn);
    if (isScalarScale(qk)) {
      chain.add(qk);
      s *= scaleOf(qk);
      qk = GraphEdits.producer(sd, qk.getInputsToOp().get(0));
    }
    chain.add(qk);
    String q = qk.getInputsToOp().get(0), k = qk.getInputsToOp().get(1);
    if (!transposeB(qk)) {
      SameDiffOp perm = GraphEdits.producer(sd, k);
      chain.add(perm);
      k = perm.getInputsToOp().get(0);
    }
    SameDiffOp qs = GraphEdits.producer(sd, q);
    if (isScalarScale(qs)) {
      chain.add(qs);
      s *= scaleOf(qs);
      q = qs.getInputsToOp().get(0);
    }
    SameDiffOp ks = GraphEdits.producer(sd, k);
    if (isScalarScale(ks)) {
      chain.add(ks);
      s *= scaleOf(ks);
      k = ks.getInputsToOp().get(0);
    }
    chain.add(smOp);
    chain.add(pv);
    long[] smArgs = ((CustomOp) smOp.getOp()).iArgs();
    if (smArgs != null && smArgs.length > 0 && smArgs[0] != 3 && smArgs[0] != -1) {
      problem = "softmax is over dimension " + smArgs[0] + ", not the last";
    }
    for (SameDiffOp op : chain.subList(0, chain.size() - 2)) {
      List<String> u = sd.getVariables().get(op.getOutputsOfOp().get(0)).getInputsForOp();
      if (u == null || u.size() != 1) {
        problem = "intermediate '" + op.getOutputsOfOp().get(0) + "' is used outside the attention";
      }
    }
    SDVariable mv = sd.getVariable(maskVar);
    int t = -1;
    long[] qs4 = sd.getVariable(q).getShape();
    if (qs4 != null && qs4.length == 4 && qs4[2] > 0) {
      t = (int) qs4[2];
    }
    if (problem == null) {
      if (select || mv.getVariableType() != VariableType.CONSTANT) {
        String source = runtimeSource(sd, maskVar);
        String what =
            source != null
                ? "a runtime value (computed from placeholder '" + source + "')"
                : mv.getVariableType() == VariableType.CONSTANT ? "a constant" : "computed";
        problem =
            "mask '"
                + maskVar
                + "' is "
                + what
                + (select ? " applied by a boolean select" : " added to the scores")
                + "; only a constant causal [T, T] bias added to the scores is replaced (the"
                + " sparse attention op applies its own causal block pattern, so a runtime mask"
                + " such as a padding mask would be lost): kept dense";
      } else {
        INDArray bias = sd.getArrForVarName(maskVar);
        t = (int) bias.size(-1);
        if (bias.rank() != 2 || bias.size(0) != bias.size(1)) {
          problem = "bias '" + maskVar + "' is not a [T, T] matrix";
        } else if (!isCausal(bias)) {
          problem =
              "bias '"
                  + maskVar
                  + "' is not a causal mask (0 on/below the diagonal, <= -1e4 above)";
        }
      }
    }
    return new Match(
        q, k, pv.getInputsToOp().get(1), probs, pv.getOutputsOfOp().get(0), s, t, chain, problem);
  }

  /** The Q·K matmul behind {@code var} (through at most one scalar scale), or null. */
  private static SameDiffOp scoresOf(SameDiff sd, String var) {
    SameDiffOp p = GraphEdits.producer(sd, var);
    if (isScalarScale(p)) {
      p = GraphEdits.producer(sd, p.getInputsToOp().get(0));
    }
    if (p == null || !(p.getOp() instanceof Mmul) || p.getInputsToOp().size() != 2) {
      return null;
    }
    if (transposeB(p)) {
      return p;
    }
    long[] ia = ((CustomOp) p.getOp()).iArgs();
    if (ia != null && Arrays.stream(ia).anyMatch(x -> x != 0)) {
      return null;
    }
    SameDiffOp perm = GraphEdits.producer(sd, p.getInputsToOp().get(1));
    if (perm == null || !(perm.getOp() instanceof Permute)) {
      return null;
    }
    long[] axes = ((CustomOp) perm.getOp()).iArgs();
    return axes != null && Arrays.equals(axes, new long[] {0, 1, 3, 2}) ? p : null;
  }

  private static boolean transposeB(SameDiffOp op) {
    long[] ia = ((CustomOp) op.getOp()).iArgs();
    return ia != null
        && ia.length >= 2
        && ia[0] == 0
        && ia[1] == 1
        && (ia.length < 3 || ia[2] == 0);
  }

  private static boolean isSelect(SameDiffOp op) {
    Object f = op.getOp();
    return (f instanceof Select || f instanceof Where || f instanceof WhereNumpy)
        && op.getInputsToOp().size() == 3;
  }

  private static boolean isScalarScale(SameDiffOp op) {
    return op != null
        && (op.getOp() instanceof ScalarMultiplication || op.getOp() instanceof ScalarDivision);
  }

  private static double scaleOf(SameDiffOp op) {
    double s = ((BaseScalarOp) op.getOp()).scalar().getDouble(0);
    return op.getOp() instanceof ScalarDivision ? 1.0 / s : s;
  }

  /** The first placeholder {@code var} is computed from, or null. */
  static String runtimeSource(SameDiff sd, String var) {
    Deque<String> todo = new ArrayDeque<>(List.of(var));
    Set<String> seen = new HashSet<>();
    while (!todo.isEmpty()) {
      String v = todo.pop();
      if (!seen.add(v)) {
        continue;
      }
      SDVariable sv = sd.getVariable(v);
      if (sv != null && sv.getVariableType() == VariableType.PLACEHOLDER) {
        return v;
      }
      SameDiffOp p = GraphEdits.producer(sd, v);
      if (p != null) {
        todo.addAll(p.getInputsToOp());
      }
    }
    return null;
  }

  private static boolean isCausal(INDArray b) {
    long t = b.size(0);
    for (long i = 0; i < t; i++) {
      for (long j = 0; j < t; j++) {
        double v = b.getDouble(i, j);
        if (j <= i ? v != 0.0 : v > -1e4) {
          return false;
        }
      }
    }
    return true;
  }
}
