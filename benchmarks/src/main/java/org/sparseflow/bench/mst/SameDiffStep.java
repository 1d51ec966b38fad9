package org.sparseflow.bench.mst;

import java.util.List;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.dataset.DataSet;
import org.sparseflow.bench.UniformSparsity;
import org.sparseflow.examples.data.Batches;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.config.AttentionSettings;
import org.sparseflow.layers.config.FuseSettings;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.AttentionSchedule;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.SparsitySchedule;

/**
 * {@code graph-step --model samediff}: training steps of examples' {@link SameDiffGpt} (gpt-mini),
 * dense against the same graph rewritten by {@code Sparsify.apply} into SparseFlow's sparse matmul
 * and sparse attention ops.
 */
final class SameDiffStep {
  private SameDiffStep() {}

  /** SameDiffGpt's 24 attention/MLP weights (embeddings, norms and the head stay dense). */
  static final String WEIGHTS = SameDiffGpt.BLOCK_WEIGHTS;

  /** Sparsify settings for SameDiffGpt: {@code pattern} at {@code sparsity} on {@link #WEIGHTS}. */
  static SparsityConfig sparsity(String pattern, double sparsity, String attention) {
    SparsityConfig sc = UniformSparsity.of(pattern, sparsity, WEIGHTS);
    sc.setAttention(
        new AttentionSettings(attention, MstVariants.ATTENTION_BLOCK, List.of(".*"), false));
    return sc;
  }

  /**
   * The {@code fuse} section for {@code --fuse}: "default" (null: the config default), "none",
   * "layerNorm", "gelu", "biasAdd", "layerNorm+gelu" or "all".
   */
  static FuseSettings fuse(String what) {
    return switch (what) {
      case "default" -> null;
      case "none" -> FuseSettings.none();
      case "layerNorm" -> new FuseSettings(true, false, false);
      case "gelu" -> new FuseSettings(false, true, false);
      case "biasAdd" -> new FuseSettings(false, false, true);
      case "layerNorm+gelu" -> new FuseSettings(true, true, false);
      case "all" -> new FuseSettings(true, true, true);
      default ->
          throw new IllegalArgumentException(
              "--fuse = "
                  + what
                  + " is not allowed; allowed: default, none, layerNorm, gelu, biasAdd,"
                  + " layerNorm+gelu, all");
    };
  }

  /**
   * A fixed-mask MST config (no topology updates) that hands the rewritten ops their masks, cached
   * block layouts and attention pattern once: static sparsity driven through {@code MstListener}.
   */
  static MstConfig staticConfig(double sparsity, String attention, int steps) {
    MstConfig c = MstConfig.preset("static");
    c.setPattern("block16");
    c.setSchedule(
        SparsitySchedule.builder()
            .initialSparsity(sparsity)
            .ultraSparsity(sparsity)
            .finalSparsity(sparsity)
            .warmup(0.0, 0.0)
            .restoration(1.0, 1.0)
            .build());
    c.setDistribution("UNIFORM");
    c.setInclude(List.of(WEIGHTS));
    AttentionSchedule a = new AttentionSchedule();
    a.setDefaultPattern(attention);
    a.setBlockSize(MstVariants.ATTENTION_BLOCK);
    c.setAttention(a);
    return c.withTotalSteps(steps);
  }

  /** Dense or block16 with layouts read per call, no profile, the default fuse section. */
  static double[][] run(String variant, int steps, double sparsity, String attention) {
    return run("gpt-mini", variant, steps, sparsity, attention, false, null, null, "masked");
  }

  /**
   * Per-step wall, process CPU and thread CPU time (ms) of {@code steps} training steps of one
   * variant. With {@code cachedLayouts} the sparse variant's masks come from a fixed-mask {@code
   * MstListener}, which also gives the ops cached block layouts (otherwise each call reads its mask
   * input); a non-null {@code profile} counts the ops of every step after the 3 warm-up steps;
   * {@code fuse} is the sparse variant's fuse section (null: the config default); {@code storage}
   * masked or packed.
   */
  static double[][] run(
      String size,
      String variant,
      int steps,
      double sparsity,
      String attention,
      boolean cachedLayouts,
      OpProfile profile,
      FuseSettings fuse,
      String storage) {
    StepTimes.GptData data = StepTimes.GptData.bundled(size);
    GptConfig c = data.gpt();
    SameDiff sd = SameDiffGpt.build(c, 1e-3);
    if (!variant.equals("dense")) {
      SparsityConfig sc = sparsity("block16", sparsity, attention);
      sc.setFuse(fuse);
      sc.setStorage(storage);
      Sparsify.apply(sc, sd);
      if (cachedLayouts) {
        new MstListener(staticConfig(sparsity, attention, steps)).addTo(sd);
      }
    }
    if (profile != null) {
      sd.addListeners(profile);
    }
    return StepTimes.<DataSet>measure(
        steps,
        s -> {
          int[][] w = data.sampler().windows(s);
          if (profile != null) {
            profile.recording(s >= 3);
          }
          return new DataSet(
              Batches.inputIndices(w, DataType.FLOAT), Batches.targetIndices(w, DataType.FLOAT));
        },
        sd::fit);
  }
}
