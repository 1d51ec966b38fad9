package org.sparseflow.bench.memory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.sparseflow.bench.BenchOptions;
import org.sparseflow.bench.HelpOption;
import org.sparseflow.examples.gpt.GptConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Memory of the DL4J ComputationGraph GPT (or, with {@code --framework samediff}, the SameDiff GPT;
 * {@link SameDiffMemoryCase}), dense and with block-sparse MLP and attention projections at several
 * sparsities, in masked storage (dense W plus a dense mask) and packed storage (kept blocks only).
 *
 * <pre>
 *   java --add-modules jdk.incubator.vector -jar benchmarks/target/sparseflow-benchmarks.jar memory
 *        [--model gpt-mini | --d-model 512 --layers 4 --heads 8] [--pattern block16]
 *        [--sparsities 0.5,0.75,0.9,0.95]
 *        [--storages packed,masked] [--steps 3] [--context 64] [--batch 8] [--in-process]
 *        [--framework dl4j|samediff]
 * </pre>
 *
 * Each case runs in a fresh child JVM (same java, JVM options and class path) so that its peaks are
 * its own; {@code --in-process} runs them all in this JVM (peaks then only grow). Prints per case
 * {@code RESULT memory <model> framework=.. scope=sparse|model storage=.. pattern=.. density=..
 * param_bytes=.. grad_bytes=.. optimizer_bytes=.. checkpoint_bytes=.. peak_offheap_mb=..
 * peak_rss_mb=.. vs_dense=.. checkpoint_vs_dense=..}: vs_dense is (param + grad + optimizer) over
 * the dense model's for the same scope; {@code scope=sparse} counts the MLP and attention layers
 * (the ones made sparse), {@code scope=model} the whole model; checkpoint and peaks are always of
 * the whole process. peak_rss_mb is the peak process RSS (JavaCPP's {@code
 * Pointer.physicalBytes()}), peak_offheap_mb the peak of RSS less the committed Java heap, both
 * sampled every millisecond (see {@link MemoryCase}).
 */
@Command(
    name = "memory",
    synopsisHeading = "usage: ",
    description = "Parameter, gradient, optimizer, checkpoint and peak memory of the GPT graph.")
public final class MemoryBenchmark {

  @Option(names = "--model", paramLabel = "NAME", description = "gpt-tiny, gpt-mini, gpt-small")
  String model = "gpt-mini";

  @Option(
      names = "--d-model",
      paramLabel = "D",
      description = "custom size: d_model (with --layers and --heads; 0 = the named model's)")
  int dModel;

  @Option(names = "--layers", paramLabel = "N", description = "custom size: transformer blocks")
  int layers = 4;

  @Option(names = "--heads", paramLabel = "H", description = "custom size: attention heads")
  int heads = 8;

  @Option(
      names = "--sparsities",
      split = ",",
      paramLabel = "S",
      description = "sparsities in (0, 1)")
  List<Double> sparsities = DEFAULT_SPARSITIES;

  private static final List<Double> DEFAULT_SPARSITIES = List.of(0.5, 0.75, 0.9, 0.95);

  @Option(
      names = "--storages",
      split = ",",
      paramLabel = "S",
      description = "packed, masked and/or mst-packed (MST on packed storage; block patterns)")
  List<String> storages = List.of("packed", "masked");

  @Option(names = "--steps", paramLabel = "N", description = "Adam steps per case (>= 1)")
  int steps = 3;

  @Mixin TrainingOptions train = new TrainingOptions(8);

  @Option(
      names = "--framework",
      paramLabel = "F",
      description = "dl4j (ComputationGraph GPT, the default) or samediff (SameDiff GPT)")
  String framework = "dl4j";

  @Option(names = "--in-process", description = "run every case in this JVM")
  boolean inProcess;

  @Option(names = "--case", paramLabel = "STORAGE:SPARSITY", hidden = true)
  String single;

  @Mixin HelpOption help;

  private MemoryBenchmark() {}

  public static void main(String[] args) throws Exception {
    MemoryBenchmark b = new MemoryBenchmark();
    if (BenchOptions.parse(b, args, null, System.out)) {
      b.validate();
      b.run(args);
    }
  }

  private void validate() {
    if (!GptConfig.NAMES.contains(model)) {
      throw new IllegalArgumentException(
          "--model = " + model + " is not allowed; allowed: " + GptConfig.NAMES);
    }
    MemoryArgs.checkPattern(train.pattern);
    sparsities =
        MemoryArgs.sparsitiesFor(train.pattern, sparsities, sparsities.equals(DEFAULT_SPARSITIES));
    for (double s : sparsities) {
      if (!(s > 0 && s < 1)) {
        throw new IllegalArgumentException(
            "--sparsities contains " + s + "; allowed: values in (0, 1)");
      }
    }
    for (String s : storages) {
      boolean mst = s.equals(SameDiffMemoryCase.MST_PACKED) && train.pattern.startsWith("block");
      if (!s.equals("packed") && !s.equals("masked") && !mst) {
        throw new IllegalArgumentException(
            "--storages contains "
                + s
                + "; allowed: packed, masked (and "
                + SameDiffMemoryCase.MST_PACKED
                + " with a block pattern)");
      }
    }
    if (!framework.equals("dl4j") && !framework.equals("samediff")) {
      throw new IllegalArgumentException(
          "--framework = " + framework + " is not allowed; allowed: dl4j, samediff");
    }
    if (framework.equals("samediff") && !train.pattern.startsWith("block")) {
      throw new IllegalArgumentException(
          "--pattern = "
              + train.pattern
              + " is not allowed with --framework samediff; allowed: block8|16|32|64 (packed"
              + " SameDiff storage holds kept blocks)");
    }
    if (dModel != 0) {
      MemoryArgs.checkSize(dModel, layers, heads);
    }
    train.validate(steps);
  }

  private void run(String[] args) throws Exception {
    if (single != null) {
      String[] p = single.split(":");
      Map<String, String> r = runCase(p[0], p.length > 1 ? Double.parseDouble(p[1]) : 0.0);
      System.out.println("MEMORY " + format(r));
      return;
    }
    List<String> cases = new ArrayList<>();
    cases.add("dense");
    for (double s : sparsities) {
      for (String st : storages) {
        cases.add(st + ":" + s);
      }
    }
    System.out.println(
        "RESULT memory method offheap=rss_minus_committed_heap"
            + " rss=javacpp_Pointer.physicalBytes sample_ms=1 jvm="
            + (inProcess ? "shared" : "one_per_case")
            + " threads="
            + System.getenv("OMP_NUM_THREADS"));
    Map<String, String> dense = null;
    for (String c : cases) {
      Map<String, String> r;
      if (inProcess) {
        String[] p = c.split(":");
        r = runCase(p[0], p.length > 1 ? Double.parseDouble(p[1]) : 0.0);
      } else {
        r = child(c, args);
      }
      if (dense == null) {
        dense = r;
      }
      for (String scope : new String[] {"sparse", "model"}) {
        System.out.println(result(scope, r, dense));
      }
    }
  }

  private Map<String, String> runCase(String storage, double sparsity) throws Exception {
    MemoryCase.Size size = train.size(model, dModel, layers, heads);
    return framework.equals("samediff")
        ? SameDiffMemoryCase.run(size, storage, train.pattern, 1.0 - sparsity, steps, train.seed)
        : MemoryCase.run(size, storage, train.pattern, 1.0 - sparsity, steps, train.seed);
  }

  private String result(String scope, Map<String, String> r, Map<String, String> dense) {
    long total = total(scope, r);
    long denseTotal = total(scope, dense);
    double ckpt =
        Double.parseDouble(r.get("checkpoint_bytes"))
            / Double.parseDouble(dense.get("checkpoint_bytes"));
    return String.format(
        Locale.ROOT,
        "RESULT memory %s framework=%s scope=%s storage=%s pattern=%s density=%.2f param_bytes=%s"
            + " grad_bytes=%s optimizer_bytes=%s checkpoint_bytes=%s peak_offheap_mb=%s"
            + " peak_rss_mb=%s vs_dense=%.3f checkpoint_vs_dense=%.3f min_step_ms=%s",
        dModel > 0 ? "gpt-d" + dModel + "-l" + layers : model,
        framework,
        scope,
        r.get("storage"),
        r.get("pattern"),
        Double.parseDouble(r.get("density")),
        r.get(scope + "_param_bytes"),
        r.get(scope + "_grad_bytes"),
        r.get(scope + "_optimizer_bytes"),
        r.get("checkpoint_bytes"),
        r.get("peak_offheap_mb"),
        r.get("peak_rss_mb"),
        (double) total / denseTotal,
        ckpt,
        r.getOrDefault("min_step_ms", "n/a"));
  }

  private static long total(String scope, Map<String, String> r) {
    return Long.parseLong(r.get(scope + "_param_bytes"))
        + Long.parseLong(r.get(scope + "_grad_bytes"))
        + Long.parseLong(r.get(scope + "_optimizer_bytes"));
  }

  private static String format(Map<String, String> r) {
    StringBuilder sb = new StringBuilder();
    r.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : " ").append(k).append('=').append(v));
    return sb.toString();
  }

  /** Runs one case in a child JVM with this JVM's java, options and class path. */
  private Map<String, String> child(String c, String[] args) throws Exception {
    List<String> argv = new ArrayList<>(List.of(args));
    argv.addAll(List.of("--case", c));
    ChildJvm.Result r = ChildJvm.run(List.of(), a -> false, "memory", argv, "MEMORY ");
    if (r.exitCode() != 0 || r.payload() == null) {
      throw new IllegalStateException(
          "memory case " + c + " failed in its child JVM (exit code " + r.exitCode() + ")");
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (String kv : r.payload().split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    return out;
  }
}
