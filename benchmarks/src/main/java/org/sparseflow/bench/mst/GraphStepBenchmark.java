package org.sparseflow.bench.mst;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.bench.BenchOptions;
import org.sparseflow.bench.HelpOption;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.layers.config.AttentionSettings;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Training-step time of gpt-mini as a ComputationGraph ({@link ComputationGraphGpt}, the MST
 * benchmark's {@code --model graph}), dense against a fixed block-sparse configuration: block16
 * weights at a given sparsity on the 24 attention/MLP matrices plus an attention pattern. No MST
 * listener, no evaluation: the steady-state cost of the kernels and layers, for profiling and for
 * before/after comparisons of kernel work.
 *
 * <pre>
 *   java -jar benchmarks/target/sparseflow-benchmarks.jar graph-step [--steps 20] [--sparsity
 * 0.885]
 *        [--attention local:16] [--variants dense,block16] [--format nwc|ncw]
 *        [--model graph|samediff] [--fuse default|none|...|all]
 * </pre>
 *
 * Prints {@code RESULT graph-step <variant> model=... median_ms=... min_ms=... cpu_median_ms=...
 * thread_cpu_median_ms=... thread_cpu_min_ms=...} (process CPU time, all threads, and CPU time of
 * the thread running the step; the first 3 steps are warm-up and excluded) and, with both variants,
 * {@code RESULT graph-step speedup model=... median=... min=...}.
 */
@Command(
    name = "graph-step",
    synopsisHeading = "usage: ",
    description =
        "Training-step time of a reference GPT (gpt-mini or gpt-small), dense and block-sparse.")
public final class GraphStepBenchmark {

  @Option(names = "--steps", paramLabel = "N", description = "timed steps (>= 5, 3 warm-up)")
  int steps = 20;

  @Option(
      names = "--size",
      paramLabel = "gpt-mini|gpt-small",
      description = "the GPT's size (default gpt-mini; gpt-small: 6 layers, d_model 256, 8 heads)")
  String size = "gpt-mini";

  @Option(names = "--sparsity", paramLabel = "S", description = "block16 sparsity, in (0, 1)")
  double sparsity = 0.885;

  @Option(names = "--attention", paramLabel = "PATTERN", description = "attention pattern")
  String attention = "local:16";

  @Option(
      names = "--variants",
      split = ",",
      paramLabel = "V",
      description = "dense and/or block16 (default both)")
  List<String> variants = List.of("dense", "block16");

  @Option(names = "--format", paramLabel = "nwc|ncw", description = "activation layout")
  String formatName = ComputationGraphGpt.DEFAULT_FORMAT.name().toLowerCase(Locale.ROOT);

  @Option(
      names = "--model",
      paramLabel = "graph|samediff",
      description =
          "graph (default): ComputationGraphGpt on the sparse layers; samediff: SameDiffGpt,"
              + " rewritten by Sparsify.apply into sparse matmul/attention ops")
  String model = "graph";

  @Option(
      names = "--cached-layouts",
      description =
          "samediff only: masks and cached block layouts from a fixed-mask MstListener instead of"
              + " each op reading its mask input per call")
  boolean cachedLayouts;

  @Option(
      names = "--storage",
      paramLabel = "masked|packed",
      description =
          "samediff only, block16 variant: masked (dense W + mask, the default) or packed (a"
              + " variable of the kept blocks only; its layout is fixed, so no --cached-layouts)")
  String storage = "masked";

  @Option(
      names = "--fuse",
      paramLabel = "WHAT",
      description =
          "samediff only, block16 variant: the Sparsify config's fuse section: default (the"
              + " config default), none, layerNorm, gelu, biasAdd, layerNorm+gelu or all")
  String fuse = "default";

  @Option(
      names = "--op-profile",
      description =
          "samediff only: print the CPU time of each op type per step (OP lines; run with"
              + " -Dsparseflow.threads=1 and OMP_NUM_THREADS=1)")
  boolean opProfile;

  @Mixin HelpOption help;

  private GraphStepBenchmark() {}

  public static void main(String[] args) throws Exception {
    GraphStepBenchmark b = new GraphStepBenchmark();
    if (BenchOptions.parse(b, args, null, System.out)) {
      b.run();
    }
  }

  private void run() throws Exception {
    RNNFormat format = format(formatName);
    if (steps < 5) {
      throw new IllegalArgumentException(
          "--steps = " + steps + " is too small; allowed: >= 5 (3 warm-up steps)");
    }
    if (!(sparsity > 0 && sparsity < 1)) {
      throw new IllegalArgumentException(
          "--sparsity = " + sparsity + " is not allowed; allowed: (0, 1)");
    }
    MstVariants.checkSize(size);
    if (!model.equals("graph") && !model.equals("samediff")) {
      throw new IllegalArgumentException(
          "--model = " + model + " is not allowed; allowed: graph, samediff");
    }
    if (!storage.equals("masked") && !storage.equals("packed")) {
      throw new IllegalArgumentException(
          "--storage = " + storage + " is not allowed; allowed: masked, packed");
    }
    if (storage.equals("packed") && (cachedLayouts || !model.equals("samediff"))) {
      throw new IllegalArgumentException(
          "--storage = packed is not allowed with "
              + (cachedLayouts ? "--cached-layouts" : "--model " + model)
              + "; allowed: --model samediff without --cached-layouts (packed layouts are fixed)");
    }
    for (String v : variants) {
      if (!v.equals("dense") && !v.equals("block16")) {
        throw new IllegalArgumentException(
            "variant '" + v + "' is not allowed; allowed: dense, block16");
      }
    }
    double[] medians = new double[2];
    double[] mins = new double[2];
    double[] cpuMedians = new double[2];
    double[] threadMedians = new double[2];
    double[] threadMins = new double[2];
    OpProfile profile = null;
    for (String v : variants) {
      double[][] t =
          model.equals("samediff")
              ? SameDiffStep.run(
                  size,
                  v,
                  steps,
                  sparsity,
                  attention,
                  cachedLayouts,
                  profile = newProfile(),
                  SameDiffStep.fuse(fuse),
                  storage)
              : run(size, v, steps, sparsity, attention, format);
      double[] tail = Arrays.copyOfRange(t[0], 3, t[0].length);
      double[] cpuTail = Arrays.copyOfRange(t[1], 3, t[1].length);
      Arrays.sort(tail);
      Arrays.sort(cpuTail);
      double[] threadTail = Arrays.copyOfRange(t[2], 3, t[2].length);
      Arrays.sort(threadTail);
      int k = v.equals("dense") ? 0 : 1;
      if (profile != null) {
        for (String line : profile.report(steps - 3, 14)) {
          System.out.println(line.replaceFirst("^OP ", "OP " + v + " "));
        }
      }
      medians[k] = tail[tail.length / 2];
      mins[k] = tail[0];
      cpuMedians[k] = cpuTail[cpuTail.length / 2];
      threadMedians[k] = threadTail[threadTail.length / 2];
      threadMins[k] = threadTail[0];
      System.out.printf(
          Locale.ROOT,
          "RESULT graph-step %s model=%s steps=%d median_ms=%.1f min_ms=%.1f cpu_median_ms=%.1f"
              + " thread_cpu_median_ms=%.1f thread_cpu_min_ms=%.1f%s threads=%s load=%.2f%n",
          v,
          model,
          steps,
          medians[k],
          mins[k],
          cpuMedians[k],
          threadMedians[k],
          threadMins[k],
          v.equals("dense")
              ? ""
              : " sparsity="
                  + sparsity
                  + " attention="
                  + attention
                  + (cachedLayouts ? " layouts=cached" : "")
                  + (model.equals("samediff") ? " fuse=" + fuse + " storage=" + storage : ""),
          System.getenv("OMP_NUM_THREADS") + " format=" + format,
          ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    }
    if (variants.size() == 2) {
      System.out.printf(
          Locale.ROOT,
          "RESULT graph-step speedup model=%s median=%.2f min=%.2f cpu_median=%.2f"
              + " thread_cpu_median=%.2f thread_cpu_min=%.2f%n",
          model,
          medians[0] / medians[1],
          mins[0] / mins[1],
          cpuMedians[0] / cpuMedians[1],
          threadMedians[0] / threadMedians[1],
          threadMins[0] / threadMins[1]);
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

  private OpProfile newProfile() {
    return opProfile ? new OpProfile() : null;
  }

  /** Per-step wall and process CPU time (ms) of {@code steps} training steps of one variant. */
  static double[][] run(
      String variant, int steps, double sparsity, String attention, RNNFormat format)
      throws Exception {
    return run("gpt-mini", variant, steps, sparsity, attention, format);
  }

  /** As {@link #run(String, int, double, String, RNNFormat)} for GPT {@code size}. */
  static double[][] run(
      String size, String variant, int steps, double sparsity, String attention, RNNFormat format)
      throws Exception {
    StepTimes.GptData data = StepTimes.GptData.bundled(size);
    GptConfig c = data.gpt();
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
    ComputationGraph trained = net;
    return StepTimes.<MultiDataSet>measure(
        steps,
        s -> ComputationGraphGpt.batch(data.sampler().windows(s), c.vocab(), format),
        trained::fit);
  }
}
