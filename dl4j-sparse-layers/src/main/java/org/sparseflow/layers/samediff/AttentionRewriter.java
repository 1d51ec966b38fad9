package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ops.impl.transforms.custom.SoftMax;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.samediff.AttentionMatcher.Match;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.samediff.SparseAttentionOps;

/**
 * The attention half of {@link SameDiffSparsifier#rewrite}: every attention {@link
 * AttentionMatcher} recognises gets a report line; one with a constant causal bias that the config
 * selects is replaced by one sparse attention op, any other says why it stays dense.
 */
final class AttentionRewriter {
  private AttentionRewriter() {}

  /** Rewrites what it can; returns every recognised attention, replaced or not. */
  static List<AttentionSite> rewriteAttention(
      SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    List<AttentionSite> sites = new ArrayList<>();
    for (SameDiffOp smOp : new ArrayList<>(sd.getOps().values())) {
      if (!(smOp.getOp() instanceof SoftMax) || !sd.getOps().containsKey(smOp.getName())) {
        continue;
      }
      Match m = AttentionMatcher.match(sd, smOp);
      if (m == null) {
        continue;
      }
      sites.add(m.site());
      String name = m.probs();
      boolean wanted =
          cfg.getAttention() != null
              && cfg.getAttention().sparseAttentionRequested()
              && (cfg.attentionSelects(name) || cfg.attentionSelects(m.out()));
      String why = m.problem();
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
      if (why == null && (m.t() <= 0 || m.t() % bs != 0)) {
        why = "context length " + m.t() + " is not a multiple of attention.blockSize " + bs;
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
      List<String> consumers = sd.getVariables().get(m.out()).getInputsForOp();
      consumers = consumers == null ? new ArrayList<>() : new ArrayList<>(consumers);
      for (SameDiffOp op : m.chain()) {
        GraphEdits.removeOp(sd, op);
      }
      SparseAttentionOps.sparseAttention(
          sd,
          m.out(),
          sd.getVariable(m.q()),
          sd.getVariable(m.k()),
          sd.getVariable(m.v()),
          p,
          bs,
          m.scale());
      GraphEdits.relink(sd, m.out(), consumers);
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
                  + m.t()
                  + " blockSize="
                  + bs
                  + " scale="
                  + m.scale()
                  + " element density vs dense causal "
                  + String.format(Locale.ROOT, "%.3f", p.elementDensity(m.t()))));
    }
    return sites;
  }
}
