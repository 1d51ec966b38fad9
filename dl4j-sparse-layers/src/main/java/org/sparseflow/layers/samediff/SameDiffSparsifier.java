package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.SparseAttentionOps;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * Rewrites a SameDiff graph in place:
 *
 * <ul>
 *   <li>every trainable rank-2 weight used by linear ops ({@link LinearOps}: {@code mmul} with
 *       transpose flags, {@code xw_plus_b}, rank-3 {@code tensordot}; plus {@code gather} for a
 *       tied embedding) and selected by the config becomes the weight of {@link
 *       SparseFlowOps#sparseMatmul} ops sharing one 0/1 mask constant {@code <W>_mask} (W is zeroed
 *       outside it); {@code keepFirstDense}/{@code keepLastDense} count layers by depth from the
 *       graph inputs ({@link LayerDepth});
 *   <li>causal attention ({@link AttentionMatcher}: {@code softmax(scale Q K^T + causal bias) V},
 *       scale before or after) becomes {@link SparseAttentionOps#sparseAttention} when {@code
 *       attention.pattern} is set and {@code attention.layers} matches the softmax output name;
 *       attention with a runtime mask is recognised and reported dense with the reason;
 *   <li>the masks of an attention's Q, K, V and output projections respect head boundaries ({@link
 *       HeadAwareMasks});
 *   <li>by the config's {@code fuse} section, ND4J's {@code layer_norm} over the last axis and
 *       {@code gelu} become the fused SparseFlow ops, and bias adds of sparse matmuls fold into
 *       them ({@link FusionRewriter}).
 * </ul>
 *
 * Every trainable rank-2 weight and every recognised attention gets a report line. The graph is
 * edited rather than rebuilt: the replaced op and its output variable are removed and the new op's
 * output takes the old output's name, so every consumer, loss variable and user reference by name
 * is unchanged. Must run before the gradient function exists (i.e. before the first {@code fit()} /
 * {@code calculateGradients}).
 */
public final class SameDiffSparsifier {
  private SameDiffSparsifier() {}

  /**
   * Rewrites {@code sd}; weights named in {@code given} take that mask instead of a drawn one
   * (checked before the graph changes: a trainable rank-2 weight the config selects, of the mask's
   * shape, in the config's pattern).
   */
  public static SparsifyReport rewrite(
      SparsityConfig cfg, SameDiff sd, Map<String, SparseMask> given) {
    if (sd.hasGradientFunction()) {
      throw new IllegalArgumentException(
          "model = a SameDiff graph whose gradient function already exists (fit() or "
              + "calculateGradients() was called); allowed: apply Sparsify before training starts");
    }
    checkGiven(cfg, sd, given);
    SparseFlowOps.registerAll();
    List<Entry> entries = new ArrayList<>();
    List<AttentionSite> sites = AttentionRewriter.rewriteAttention(cfg, sd, entries);
    MatmulRewriter.rewriteMatmuls(cfg, sd, sites, entries, given);
    FusionRewriter.rewrite(cfg, sd, entries);
    GraphEdits.renameOpsNamedLikeForeignVariables(sd);
    Set<String> reported = new HashSet<>();
    entries.forEach(e -> reported.add(e.name()));
    entries.addAll(LinearOps.unaccounted(sd, reported));
    return new SparsifyReport(SparsifyReport.describe(cfg), entries);
  }

  private static void checkGiven(SparsityConfig cfg, SameDiff sd, Map<String, SparseMask> given) {
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    for (Map.Entry<String, SparseMask> e : given.entrySet()) {
      String w = e.getKey();
      SparseMask m = e.getValue();
      SDVariable v = sd.hasVariable(w) ? sd.getVariable(w) : null;
      INDArray a = v == null ? null : v.getArr();
      if (v == null || v.getVariableType() != VariableType.VARIABLE || a == null || a.rank() != 2) {
        throw new IllegalArgumentException(
            "masks: '" + w + "' is not a trainable rank-2 weight of the graph; allowed: those");
      }
      if (!cfg.selects(w)) {
        throw new IllegalArgumentException(
            "masks: a mask is given for '"
                + w
                + "', which the config's include "
                + cfg.getInclude()
                + " / exclude "
                + cfg.getExclude()
                + " leaves dense; allowed: masks for the weights the config selects");
      }
      if (m.rows() != a.size(0) || m.cols() != a.size(1)) {
        throw new IllegalArgumentException(
            "masks: the mask of '"
                + w
                + "' is ["
                + m.rows()
                + ", "
                + m.cols()
                + "]; allowed: the weight's shape "
                + Arrays.toString(a.shape()));
      }
      if (!m.spec().toString().equals(spec.toString())) {
        throw new IllegalArgumentException(
            "masks: the mask of '"
                + w
                + "' has pattern "
                + m.spec()
                + "; allowed: the config's pattern "
                + spec);
      }
    }
  }

  /**
   * Replaces every sparse matmul by a plain matmul of its (already zero-filled) weight, every fused
   * layer-norm / GELU op by ND4J's {@code layer_norm} / {@code gelu}, and every sparse attention op
   * by stock ops computing {@code softmax(scale Q K^T + bias) V} with a constant additive mask (0
   * where the op's layout computes a pair, -1e9 elsewhere) so that the result needs no SparseFlow
   * op.
   *
   * @param seqLen sequence length T of the attention inputs; {@code <= 0} reads it from the static
   *     shape of Q
   */
  public static void densify(SameDiff sd, int seqLen) {
    SameDiffDensifier.densify(sd, seqLen);
  }
}
