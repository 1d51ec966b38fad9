package org.sparseflow.bench.mst;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.data.TokenSplit;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.layers.config.AttentionSettings;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;

/**
 * Training-step time of gpt-mini as a ComputationGraph ({@link ComputationGraphGpt}, the MST
 * benchmark's {@code --model graph}), dense against a fixed block-sparse configuration: block16
 * weights at a given sparsity on the 24 attention/MLP matrices plus an attention pattern. No MST
 * listener, no evaluation: the steady-state cost of the kernels and layers, for profiling and for
 * before/after comparisons of kernel work.
 *
 * <pre>
 *   java -jar benchmarks/target/sparseflow-benchmarks.jar graph-step [--steps 20] [--sparsity 0.885]
 *        [--attention local:16] [--variants dense,block16] [--format nwc|ncw]
 * </pre>
 *
 * Prints {@code RESULT graph-step <variant> median_ms=... min_ms=...} (the first 3 steps are
 * warm-up and excluded) and, with both variants, {@code RESULT graph-step speedup median=...
 * min=...}.
 */
public final class GraphStepBenchmark {

  private GraphStepBenchmark() {}

  public static void main(String[] args) throws Exception {
    int steps = 20;
    double sparsity = 0.885;
    String attention = "local:16";
    List<String> variants = List.of("dense", "block16");
    RNNFormat format = ComputationGraphGpt.DEFAULT_FORMAT;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = i + 1 < args.length ? args[i + 1] : null;
      switch (a) {
        case "--steps" -> {
          steps = (int) number(a, v, true);
          i++;
        }
        case "--sparsity" -> {
          sparsity = number(a, v, false);
          i++;
        }
        case "--attention" -> {
          attention = need(a, v);
          i++;
        }
        case "--variants" -> {
          variants = List.of(need(a, v).split(","));
          i++;
        }
        case "--format" -> {
          format = format(need(a, v));
          i++;
        }
        default ->
            throw new IllegalArgumentException(
                "unknown option "
                    + a
                    + "; allowed: --steps N, --sparsity S, --attention PATTERN, --variants"
                    + " dense,block16, --format nwc|ncw");
      }
    }
    if (steps < 5) {
      throw new IllegalArgumentException(
          "--steps = " + steps + " is too small; allowed: >= 5 (3 warm-up steps)");
    }
    if (!(sparsity > 0 && sparsity < 1)) {
      throw new IllegalArgumentException(
          "--sparsity = " + sparsity + " is not allowed; allowed: (0, 1)");
    }
    for (String v : variants) {
      if (!v.equals("dense") && !v.equals("block16")) {
        throw new IllegalArgumentException(
            "variant '" + v + "' is not allowed; allowed: dense, block16");
      }
    }
    double[] medians = new double[2];
    double[] mins = new double[2];
    for (String v : variants) {
      double[] ms = run(v, steps, sparsity, attention, format);
      double[] tail = Arrays.copyOfRange(ms, 3, ms.length);
      Arrays.sort(tail);
      int k = v.equals("dense") ? 0 : 1;
      medians[k] = tail[tail.length / 2];
      mins[k] = tail[0];
      System.out.printf(
          Locale.ROOT,
          "RESULT graph-step %s steps=%d median_ms=%.1f min_ms=%.1f%s threads=%s%n",
          v,
          steps,
          medians[k],
          mins[k],
          v.equals("dense") ? "" : " sparsity=" + sparsity + " attention=" + attention,
          System.getenv("OMP_NUM_THREADS") + " format=" + format);
    }
    if (variants.size() == 2) {
      System.out.printf(
          Locale.ROOT,
          "RESULT graph-step speedup median=%.2f min=%.2f%n",
          medians[0] / medians[1],
          mins[0] / mins[1]);
    }
  }

  private static RNNFormat format(String text) {
    return switch (text.toLowerCase(Locale.ROOT)) {
      case "nwc" -> RNNFormat.NWC;
      case "ncw" -> RNNFormat.NCW;
      default ->
          throw new IllegalArgumentException(
              "--format = " + text + " is not allowed; allowed: nwc, ncw");
    };
  }

  private static String need(String option, String value) {
    if (value == null) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return value;
  }

  private static double number(String option, String value, boolean integer) {
    try {
      return integer
          ? Integer.parseInt(need(option, value))
          : Double.parseDouble(need(option, value));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          option
              + " = "
              + value
              + " is not allowed; allowed: "
              + (integer ? "an integer" : "a number"));
    }
  }

  /** Per-step wall time (ms) of {@code steps} training steps of one variant. */
  static double[] run(
      String variant, int steps, double sparsity, String attention, RNNFormat format)
      throws Exception {
    Corpus corpus = Corpus.bundled();
    CharTokenizer tok = CharTokenizer.fit(corpus.text());
    TokenSplit split =
        TokenSplit.of(
            tok.encode(corpus.text()), TokenSplit.DEFAULT_TRAIN_FRACTION, MstVariants.CONTEXT);
    GptConfig c = MstVariants.gptMini(tok.vocabSize());
    boolean dense = variant.equals("dense");
    ComputationGraph net =
        new ComputationGraph(
            ComputationGraphGpt.configuration(
                c,
                new Adam(1e-3),
                0.01,
                dense ? c.context() : MstVariants.ATTENTION_BLOCK,
                format));
    net.init();
    if (!dense) {
      SparsityConfig sc = MstVariants.graphSparsity("block16", sparsity);
      sc.setAttention(
          new AttentionSettings(attention, MstVariants.ATTENTION_BLOCK, List.of(".*"), false));
      net = Sparsify.apply(sc, net).model();
    }
    BatchSampler sampler =
        new BatchSampler(split.train(), MstVariants.BATCH, c.context(), MstVariants.SEED);
    double[] ms = new double[steps];
    for (int s = 0; s < steps; s++) {
      MultiDataSet ds = ComputationGraphGpt.batch(sampler.windows(s), c.vocab(), format);
      long t0 = System.nanoTime();
      net.fit(ds);
      ms[s] = (System.nanoTime() - t0) / 1e6;
    }
    return ms;
  }
}
