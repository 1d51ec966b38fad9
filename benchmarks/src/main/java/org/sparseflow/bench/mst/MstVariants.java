package org.sparseflow.bench.mst;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.sparseflow.bench.UniformSparsity;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.mst.core.FlopCounter;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.train.GptFlops;

/**
 * The variants of the MST benchmark and what they share: the gpt-mini setup (batch, seed, context),
 * each variant's MST config, the FLOP model of both GPTs and the optimizer.
 */
final class MstVariants {
  static final int CONTEXT = 128;
  static final int BATCH = 16;
  static final long SEED = 42;

  /**
   * Block size of the MST graph variants' attention layout: local:16 skips all but two 16x16 tiles
   * per row.
   */
  static final int ATTENTION_BLOCK = 16;

  private MstVariants() {}

  /** Checks the {@code --size} option of the MST suites: gpt-mini or gpt-small. */
  static void checkSize(String size) {
    if (!"gpt-mini".equals(size) && !"gpt-small".equals(size)) {
      throw new IllegalArgumentException(
          "--size = " + size + " is not allowed; allowed: gpt-mini, gpt-small");
    }
  }

  /**
   * The config of a variant: {@code base} (an MST preset or file) with the variant's pattern, or
   * dense.
   */
  static MstConfig configFor(MstConfig base, String variant, int steps) {
    return configFor(base, variant, steps, false);
  }

  /**
   * As {@link #configFor(MstConfig, String, int)}; {@code graph} selects ComputationGraphGpt's
   * weight names.
   */
  static MstConfig configFor(MstConfig base, String variant, int steps, boolean graph) {
    MstConfig c;
    if (variant.equals("dense")) {
      c = MstConfig.preset("dense");
    } else {
      c = base.copy();
      c.setPattern(variant);
      // ΔT and the prune interval follow the run length by the config's own rule
      // (topologyUpdates; the MST presets ask for 20 updates per run), applied by withTotalSteps
    }
    // the sparse-able linears: attention q/k/v/o and the MLP; embeddings and head stay dense
    c.setInclude(
        graph
            ? List.of("h\\d+_attn_W[qkvo]", "h\\d+_(fc|proj)_W")
            : List.of("h\\d+_attn_w[qkvo]", "h\\d+_mlp_(fc|proj)"));
    return c.withTotalSteps(steps);
  }

  /**
   * FLOP counter of the benchmark GPT; linears carry the model's own weight names (no name map
   * needed).
   */
  static FlopCounter flopCounter(GptConfig g, boolean graph) {
    List<FlopCounter.Linear> ls = new ArrayList<>();
    int c = g.dModel();
    for (int l = 0; l < g.layers(); l++) {
      for (String w : List.of("q", "k", "v", "o")) {
        ls.add(new FlopCounter.Linear("h" + l + "_attn_" + (graph ? "W" : "w") + w, c, c));
      }
      ls.add(new FlopCounter.Linear("h" + l + (graph ? "_fc_W" : "_mlp_fc"), c, 4L * c));
      ls.add(new FlopCounter.Linear("h" + l + (graph ? "_proj_W" : "_mlp_proj"), 4L * c, c));
    }
    if (!graph) {
      ls.add(new FlopCounter.Linear("wte", g.vocab(), c)); // one-hot x wte in SameDiffGpt (dense)
    } // (ComputationGraphGpt: a lookup, no matmul)
    ls.add(new FlopCounter.Linear("lm_head", c, g.vocab())); // dense
    return GptFlops.counter(g, BATCH, ls);
  }

  /**
   * Counted FLOP reduction of a variant from the schedule alone: MstCore on random weights, no
   * model.
   */
  static double projectedFlopReduction(
      MstConfig base, String variant, GptConfig g, int steps, boolean graph) {
    MstCore core = projectedCore(base, variant, g, steps, graph);
    return core.cumulativeDenseFlops() / core.cumulativeFlops();
  }

  /**
   * An MstCore run through a variant's whole schedule on random weights (counted FLOPs, no model).
   */
  static MstCore projectedCore(
      MstConfig base, String variant, GptConfig g, int steps, boolean graph) {
    MstCore core = new MstCore(configFor(base, variant, steps, graph));
    Random r = new Random(SEED);
    Map<String, float[]> w = new LinkedHashMap<>();
    for (FlopCounter.Linear l : flopCounter(g, graph).linears()) {
      if (core.config().selects(l.name)) {
        core.register(l.name, (int) l.in, (int) l.out);
        float[] x = new float[(int) (l.in * l.out)];
        for (int i = 0; i < x.length; i++) {
          x[i] = (float) r.nextGaussian();
        }
        w.put(l.name, x);
      }
    }
    core.setFlopCounter(flopCounter(g, graph), Map.of());
    core.setAttentionLayers(g.layers());
    core.setSeqLen(g.context());
    core.initialize(w);
    for (long t = 0; t < steps; t++) {
      core.stepDone(t, Double.NaN);
      if (core.isMaskStep(t)) {
        core.updateMasks(t, w, w);
      }
    }
    return core;
  }

  /**
   * Adam at {@code lr}, constant ({@code none}) or decayed linearly to 0 at the last step ({@code
   * linear}).
   */
  static IUpdater adam(double lr, String decay, int steps) {
    return decay.equals("linear")
        ? Adam.builder().learningRateSchedule(new LinearDecaySchedule(lr, steps)).build()
        : new Adam(lr);
  }

  /**
   * Sparsify settings for ComputationGraphGpt's 24 attention/MLP weight matrices (embeddings, norms
   * and the head stay dense): {@code pattern} at {@code sparsity}, the same density in every layer.
   */
  static SparsityConfig graphSparsity(String pattern, double sparsity) {
    return UniformSparsity.of(pattern, sparsity, "h\\d+_(attn|fc|proj)");
  }
}
