package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.BaseScalarOp;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.impl.reduce.Mmul;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarDivision;
import org.nd4j.linalg.api.ops.impl.scalar.ScalarMultiplication;
import org.nd4j.linalg.api.ops.impl.transforms.custom.SoftMax;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.samediff.SparseAttentionOps;

/**
 * The attention half of {@link SameDiffSparsifier#rewrite}: finds the causal attention subgraph
 * {@code matmul(Q, K, transposeB) -> scale -> add(causal bias) -> softmax -> matmul(., V)} and
 * replaces it by one sparse attention op.
 */
final class AttentionRewriter {
  private AttentionRewriter() {}

  static void rewriteAttention(SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    for (SameDiffOp smOp : new ArrayList<>(sd.getOps().values())) {
      if (!(smOp.getOp() instanceof SoftMax) || !sd.getOps().containsKey(smOp.getName())) {
        continue;
      }
      Match m = match(sd, smOp);
      if (m == null) {
        continue;
      }
      String name = m.probs;
      boolean wanted =
          cfg.getAttention() != null
              && cfg.getAttention().sparseAttentionRequested()
              && (cfg.attentionSelects(name) || cfg.attentionSelects(m.out));
      String why = m.problem;
      if (why == null && !wanted) {
        why =
            cfg.getAttention() == null || !cfg.getAttention().sparseAttentionRequested()
                ? "no sparse attention pattern in the config"
                : "not matched by attention.layers " + cfg.getAttention().getLayers();
      }
      if (why == null && wanted && !Backends.javaKernelsRun()) {
        // the matched subgraph already is the dense masked attention; the Java op would not run
        // here
        why =
            "the ND4J backend's executioner cannot run sparseflow_sparse_attention (CUDA, or"
                + " -Dsparseflow.backend=stock); kept as the dense masked subgraph";
      }
      int bs = wanted ? cfg.getAttention().getBlockSize() : 0;
      if (why == null && m.t % bs != 0) {
        why = "context length " + m.t + " is not a multiple of attention.blockSize " + bs;
      }
      AttentionPattern p = null;
      if (why == null) {
        try {
          p = AttentionPattern.parse(cfg.getAttention().getPattern());
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(
              "Sparsity config: field 'attention.pattern' has value '"
                  + cfg.getAttention().getPattern()
                  + "': "
                  + e.getMessage(),
              e);
        }
      }
      if (why != null) {
        entries.add(
            new Entry(
                name,
                "causal attention",
                "causal attention",
                Status.DENSE,
                null,
                1.0,
                Double.NaN,
                null,
                0,
                why));
        continue;
      }
      List<String> consumers = sd.getVariables().get(m.out).getInputsForOp();
      consumers = consumers == null ? new ArrayList<>() : new ArrayList<>(consumers);
      for (SameDiffOp op : m.chain) {
        GraphEdits.removeOp(sd, op);
      }
      SparseAttentionOps.sparseAttention(
          sd, m.out, sd.getVariable(m.q), sd.getVariable(m.k), sd.getVariable(m.v), p, bs, m.scale);
      GraphEdits.relink(sd, m.out, consumers);
      entries.add(
          new Entry(
              name,
              "causal attention",
              "sparseflow attention",
              Status.SPARSE_ATTENTION,
              null,
              1.0,
              Double.NaN,
              p.toString(),
              0,
              "T="
                  + m.t
                  + " blockSize="
                  + bs
                  + " scale="
                  + m.scale
                  + " element density vs dense causal "
                  + String.format(Locale.ROOT, "%.3f", p.elementDensity(m.t))));
    }
  }

  /**
   * A recognised causal attention chain; {@code problem} != null when recognised but not
   * replaceable.
   */
  private record Match(
      String q,
      String k,
      String v,
      String probs,
      String out,
      double scale,
      int t,
      List<SameDiffOp> chain,
      String problem) {}

  private static Match match(SameDiff sd, SameDiffOp smOp) {
    long[] smArgs = ((CustomOp) smOp.getOp()).iArgs();
    String probs = smOp.getOutputsOfOp().get(0);
    SameDiffOp add = GraphEdits.producer(sd, smOp.getInputsToOp().get(0));
    if (add == null || !(add.getOp() instanceof AddOp) || add.getInputsToOp().size() != 2) {
      return null;
    }
    String biasName = null, scaled = null;
    for (String in : add.getInputsToOp()) {
      SDVariable v = sd.getVariable(in);
      if (v.getVariableType() == VariableType.CONSTANT) {
        biasName = in;
      } else {
        scaled = in;
      }
    }
    if (biasName == null || scaled == null) {
      return null;
    }
    SameDiffOp scale = GraphEdits.producer(sd, scaled);
    if (scale == null
        || !(scale.getOp() instanceof ScalarMultiplication
            || scale.getOp() instanceof ScalarDivision)) {
      return null;
    }
    double s = ((BaseScalarOp) scale.getOp()).scalar().getDouble(0);
    if (scale.getOp() instanceof ScalarDivision) {
      s = 1.0 / s;
    }
    SameDiffOp qk = GraphEdits.producer(sd, scale.getInputsToOp().get(0));
    if (qk == null || !(qk.getOp() instanceof Mmul)) {
      return null;
    }
    long[] ia = ((CustomOp) qk.getOp()).iArgs();
    if (ia == null || ia.length < 2 || ia[0] != 0 || ia[1] != 1 || (ia.length > 2 && ia[2] != 0)) {
      return null;
    }
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
    List<SameDiffOp> chain = List.of(qk, scale, add, smOp, pv);
    String problem = null;
    if (smArgs != null && smArgs.length > 0 && smArgs[0] != 3 && smArgs[0] != -1) {
      problem = "softmax is not over the last dimension";
    }
    for (SameDiffOp op : List.of(qk, scale, add)) {
      List<String> u = sd.getVariables().get(op.getOutputsOfOp().get(0)).getInputsForOp();
      if (u == null || u.size() != 1) {
        problem = "intermediate '" + op.getOutputsOfOp().get(0) + "' is used outside the attention";
      }
    }
    INDArray bias = sd.getArrForVarName(biasName);
    int t = bias == null ? -1 : (int) bias.size(-1);
    if (bias == null || bias.rank() != 2 || bias.size(0) != bias.size(1)) {
      problem = "bias '" + biasName + "' is not a [T, T] matrix";
    } else if (!isCausal(bias)) {
      problem =
          "bias '" + biasName + "' is not a causal mask (0 on/below the diagonal, <= -1e4 above)";
    }
    return new Match(
        qk.getInputsToOp().get(0),
        qk.getInputsToOp().get(1),
        pv.getInputsToOp().get(1),
        probs,
        pv.getOutputsOfOp().get(0),
        s,
        t,
        chain,
        problem);
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
