package org.sparseflow.bench.memory;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.bench.UniformSparsity;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;

/**
 * The SameDiff GPT ({@link SameDiffGpt}) in one case of the memory suite: dense, or with its
 * attention and MLP weights rewritten by {@code Sparsify.apply} in masked storage (dense W plus a
 * 0/1 mask constant) or packed storage (a variable of the kept blocks only), or trained by MST on
 * packed storage ({@value #MST_PACKED}: the arrays follow MST's kept blocks). Trains a few Adam
 * steps and counts:
 *
 * <ul>
 *   <li>param bytes: the trainable variables' arrays, plus the mask constants of masked storage
 *       (model state the graph keeps in memory and saves);
 *   <li>grad bytes: one gradient per trainable variable (SameDiff computes each in full);
 *   <li>optimizer bytes: Adam's {@code stateSize(n)} (2n) per trainable variable;
 *   <li>checkpoint bytes: {@code SameDiff.save(file, true)} (with the updater state);
 *   <li>peaks: as in {@link MemoryCase.PeakSampler}.
 * </ul>
 *
 * {@code scope=sparse} counts the weights the sparse cases make sparse (and their masks or packed
 * values), {@code scope=model} every variable.
 */
final class SameDiffMemoryCase {

  /**
   * The rewritten weights (q, k, v, o and the MLP of every block), their packed values and masks.
   */
  private static final Pattern IN_SCOPE =
      Pattern.compile(SameDiffGpt.BLOCK_WEIGHTS + "(_packed|_mask)?");

  /** The storage name of MST on packed storage. */
  static final String MST_PACKED = "mst-packed";

  private SameDiffMemoryCase() {}

  static Map<String, String> run(
      MemoryCase.Size size, String storage, String pattern, double density, int steps, long seed)
      throws Exception {
    Map<String, String> out = new LinkedHashMap<>();
    out.put("storage", storage);
    out.put("pattern", storage.equals("dense") ? "dense" : pattern);
    out.put("density", String.valueOf(storage.equals("dense") ? 1.0 : density));
    SameDiff sd;
    try (MemoryCase.PeakSampler peak = new MemoryCase.PeakSampler()) {
      Corpus corpus = Corpus.bundled();
      CharTokenizer tok = CharTokenizer.fit(corpus.text());
      int[] tokens = tok.encode(corpus.text());
      GptConfig c = size.config(tok.vocabSize(), seed);
      sd = SameDiffGpt.build(c, new Adam(1e-3));
      if (storage.equals(MST_PACKED)) {
        MstConfig mst = mstConfig(pattern, density, steps);
        double start = 1.0 - mst.getSchedule().getInitialSparsity();
        Sparsify.apply(config("packed", pattern, start, seed), sd);
        new MstListener(mst).addTo(sd);
      } else if (!storage.equals("dense")) {
        Sparsify.apply(config(storage, pattern, density, seed), sd);
      }
      BatchSampler sampler = new BatchSampler(tokens, size.batch(), size.context(), seed);
      SameDiff saved = sd;
      out.put(
          "min_step_ms",
          MemoryCase.minStepMs(
              steps, s -> SameDiffGpt.batch(sampler.windows(s)), (DataSet b) -> saved.fit(b)));
      out.put(
          "checkpoint_bytes",
          String.valueOf(MemoryCase.savedBytes(".sd", f -> saved.save(f, true))));
      peak.stop();
      out.put(
          "peak_offheap_mb", String.format(Locale.ROOT, "%.1f", peak.peakTracked() / 1048576.0));
      out.put("peak_rss_mb", String.format(Locale.ROOT, "%.1f", peak.peakRss() / 1048576.0));
    }
    count(sd, true, out, "sparse");
    count(sd, false, out, "model");
    return out;
  }

  /**
   * MST in packed storage: the block preset aimed at {@code density} at the end, starting sparse
   * (packed storage), over the case's steps. The counts after the last step are the restoration
   * phase's capacity, the most the packed arrays hold in the run.
   */
  static MstConfig mstConfig(String pattern, double density, int steps) {
    MstConfig m = MstConfig.preset("mst-gpt-mini-block16").withTargetDensity(density);
    m.setPattern(pattern);
    m.setInclude(List.of(SameDiffGpt.BLOCK_WEIGHTS));
    m.getAttention().setRules(List.of()); // attention stays dense: weight memory only
    return m.withSparseStart().withTotalSteps(steps);
  }

  /** The Sparsify settings of a sparse case: every block's weights at one density. */
  static SparsityConfig config(String storage, String pattern, double density, long seed) {
    SparsityConfig sc = UniformSparsity.of(pattern, 1.0 - density, SameDiffGpt.BLOCK_WEIGHTS);
    sc.setStorage(storage);
    sc.setSeed(seed);
    return sc;
  }

  private static void count(SameDiff sd, boolean sparseOnly, Map<String, String> out, String key) {
    long param = 0, grad = 0, opt = 0;
    Adam adam = new Adam(1e-3);
    for (SDVariable v : sd.variables()) {
      boolean trainable = v.getVariableType() == VariableType.VARIABLE;
      boolean mask = v.getVariableType() == VariableType.CONSTANT && v.name().endsWith("_mask");
      if ((!trainable && !mask) || (sparseOnly && !IN_SCOPE.matcher(v.name()).matches())) {
        continue;
      }
      INDArray a = v.getArr();
      long n = a.length();
      long bytes = n * a.data().getElementSize();
      param += bytes;
      if (trainable) {
        grad += bytes;
        opt += adam.stateSize(n) * a.data().getElementSize();
      }
    }
    out.put(key + "_param_bytes", String.valueOf(param));
    out.put(key + "_grad_bytes", String.valueOf(grad));
    out.put(key + "_optimizer_bytes", String.valueOf(opt));
  }
}
