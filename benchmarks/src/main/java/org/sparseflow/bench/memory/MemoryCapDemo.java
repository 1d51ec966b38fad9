package org.sparseflow.bench.memory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.sparseflow.bench.BenchOptions;
import org.sparseflow.bench.HelpOption;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * "Dense does not fit, sparse trains": the same GPT trained dense and with packed block-sparse MLP
 * and attention projections, each in a child JVM under one memory cap.
 *
 * <pre>
 *   java --add-modules jdk.incubator.vector -jar benchmarks/target/sparseflow-benchmarks.jar \
 *        memory-cap [--d-model 1536 --layers 12 --heads 12] [--sparsity 0.9] [--pattern block16]
 *        [--heap 1g] [--cap 4g] [--steps 3] [--context 64] [--batch 4]
 * </pre>
 *
 * The cap is the child's {@code -Xmx<heap>} plus {@code -Dorg.bytedeco.javacpp.maxphysicalbytes=
 * <cap>}, a limit on the whole process's resident memory (heap included) that JavaCPP checks at
 * every native allocation; {@code -Dorg.bytedeco.javacpp.maxbytes=<cap>} is set too, but in ND4J
 * 1.0.0-M2.1 it does not limit NDArray buffers (libnd4j allocates them; JavaCPP does not count
 * them), so the physical-bytes cap is the one that binds. A case that runs out of memory reports
 * {@code status=out_of_memory} with the phase and the JVM's message; the child exits normally
 * instead of crashing. Prints one {@code RESULT memory-cap <model> variant=dense|sparse ...} line
 * per variant.
 */
@Command(
    name = "memory-cap",
    synopsisHeading = "usage: ",
    description = "Trains the GPT dense and packed-sparse under one memory cap.")
public final class MemoryCapDemo {

  @Option(names = "--d-model", paramLabel = "D", description = "d_model (default 1536)")
  int dModel = 1536;

  @Option(names = "--layers", paramLabel = "N", description = "transformer blocks (default 12)")
  int layers = 12;

  @Option(names = "--heads", paramLabel = "H", description = "attention heads (default 12)")
  int heads = 12;

  @Option(names = "--sparsity", paramLabel = "S", description = "sparsity in (0, 1) (0.9)")
  double sparsity = 0.9;

  @Option(names = "--heap", paramLabel = "SIZE", description = "-Xmx of each case (1g)")
  String heap = "1g";

  @Option(
      names = "--cap",
      paramLabel = "SIZE",
      description = "resident-memory cap of each case, heap included (4g)")
  String cap = "4g";

  @Option(names = "--steps", paramLabel = "N", description = "Adam steps (>= 1)")
  int steps = 3;

  @Mixin TrainingOptions train = new TrainingOptions(4);

  @Option(names = "--case", paramLabel = "VARIANT", hidden = true)
  String single;

  @Mixin HelpOption help;

  private MemoryCapDemo() {}

  public static void main(String[] args) throws Exception {
    MemoryCapDemo d = new MemoryCapDemo();
    if (BenchOptions.parse(d, args, null, System.out)) {
      d.validate();
      if (d.single != null) {
        System.out.println("CAP " + d.runCase(d.single));
      } else {
        d.run(args);
      }
    }
  }

  private void validate() {
    if (!(sparsity > 0 && sparsity < 1)) {
      throw new IllegalArgumentException(
          "--sparsity = " + sparsity + " is not allowed; allowed: a number in (0, 1)");
    }
    long heapBytes = bytes("--heap", heap);
    long capBytes = bytes("--cap", cap);
    if (capBytes <= heapBytes) {
      throw new IllegalArgumentException(
          "--cap = " + cap + " is not allowed; allowed: a size larger than --heap = " + heap);
    }
    MemoryArgs.checkSize(dModel, layers, heads);
    train.validate(steps);
    if (single != null && !single.equals("dense") && !single.equals("sparse")) {
      throw new IllegalArgumentException(
          "--case = " + single + " is not allowed; allowed: dense, sparse");
    }
  }

  /** Bytes of a JVM-style size: digits with an optional k, m, g or t suffix. */
  static long bytes(String option, String size) {
    if (size == null || !size.toLowerCase(Locale.ROOT).matches("[0-9]+[kmgt]?")) {
      throw new IllegalArgumentException(
          option + " = " + size + " is not allowed; allowed: a size such as 512m or 4g");
    }
    String s = size.toLowerCase(Locale.ROOT);
    char u = s.charAt(s.length() - 1);
    int shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : u == 't' ? 40 : 0;
    String digits = shift == 0 ? s : s.substring(0, s.length() - 1);
    return Long.parseLong(digits) << shift;
  }

  private String modelName() {
    return "gpt-d" + dModel + "-l" + layers;
  }

  private void run(String[] args) throws Exception {
    System.out.printf(
        Locale.ROOT,
        "memory-cap: %s (%d heads, T %d, batch %d), cap: -Xmx%s, resident memory <= %s%n",
        modelName(),
        heads,
        train.context,
        train.batch,
        heap,
        cap);
    for (String variant : new String[] {"dense", "sparse"}) {
      System.out.println("memory-cap: running " + variant + " in a child JVM ...");
      Map<String, String> r = child(variant, args);
      System.out.println(result(variant, r));
      if ("out_of_memory".equals(r.get("status"))) {
        System.out.println(
            "memory-cap: "
                + variant
                + " does not fit: out of memory during "
                + r.get("phase")
                + " ("
                + r.getOrDefault("message", "")
                + "; DL4J's memory report: "
                + r.getOrDefault("dl4j_report_dir", "n/a")
                + ")");
      }
    }
  }

  private String result(String variant, Map<String, String> r) {
    return String.format(
        Locale.ROOT,
        "RESULT memory-cap %s variant=%s pattern=%s density=%s heap=%s cap=%s status=%s phase=%s"
            + " steps_done=%s peak_rss_mb=%s param_bytes=%s min_step_ms=%s",
        modelName(),
        variant,
        variant.equals("dense") ? "dense" : train.pattern,
        variant.equals("dense") ? "1.00" : String.format(Locale.ROOT, "%.2f", 1 - sparsity),
        heap,
        cap,
        r.get("status"),
        r.get("phase"),
        r.get("steps_done"),
        r.get("peak_rss_mb"),
        r.getOrDefault("param_bytes", "n/a"),
        r.getOrDefault("min_step_ms", "n/a"));
  }

  /** Runs one variant here; returns its figures as {@code key=value} pairs. */
  private String runCase(String variant) {
    MemoryCase.Size size = train.size("custom", dModel, layers, heads);
    String storage = variant.equals("dense") ? "dense" : "packed";
    CappedTraining.Outcome o =
        CappedTraining.run(size, storage, train.pattern, 1 - sparsity, steps, train.seed);
    return o.format();
  }

  /** Runs one variant in a child JVM under the cap. */
  private Map<String, String> child(String variant, String[] args) throws Exception {
    List<String> argv = new ArrayList<>(List.of(args));
    argv.addAll(List.of("--case", variant));
    ChildJvm.Result r =
        ChildJvm.run(
            List.of(
                "-Xmx" + heap,
                "-Dorg.bytedeco.javacpp.maxbytes=" + cap,
                "-Dorg.bytedeco.javacpp.maxphysicalbytes=" + cap),
            a -> a.startsWith("-Xmx") || a.startsWith("-Dorg.bytedeco.javacpp.max"),
            "memory-cap",
            argv,
            "CAP ");
    if (r.payload() != null) {
      return CappedTraining.Outcome.parse(r.payload());
    }
    // killed before it could report (e.g. by the OS): still a result, not a crash of the suite
    Map<String, String> out = new LinkedHashMap<>();
    out.put("status", "crashed_exit_" + r.exitCode());
    out.put("phase", "unknown");
    out.put("steps_done", "0");
    out.put("peak_rss_mb", "n/a");
    return out;
  }
}
