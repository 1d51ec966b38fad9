package org.sparseflow.dataflow.api;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.cluster.GpuValidation;
import org.sparseflow.dataflow.cluster.ParallelConfig;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.hw.Hardware;
import org.sparseflow.dataflow.report.Chart;
import org.sparseflow.dataflow.report.ChromeTrace;
import org.sparseflow.dataflow.report.ClusterReport;
import org.sparseflow.dataflow.report.ReportJson;
import org.sparseflow.dataflow.report.TextReport;

/**
 * Everything behind the {@code sparseflow simulate} command: options bean, validation, simulation,
 * printing and output files. The picocli command only copies its options here and maps the typed
 * exceptions to exit codes; this class knows nothing about processes.
 */
public final class SimulateRunner {

  /** Command options; null means "use the model preset's value". */
  public static final class Options {
    public String model = "gpt3-13b";
    public Integer seq;
    public Integer layers;
    public Integer batch;
    public Integer globalBatch;
    public double sparsity = 0.875;
    public String pattern = "unstructured";
    public String recompute = "attention";
    public String chip = "sn30";
    public Path chipFile;
    public String baseline = "a100";
    public Path gpuFile;
    public int chips = 8;
    public Path out;
    public int maxRows = 40;

    /** Print the GPU model's validation against published measurements instead of simulating. */
    public boolean validate;

    /** Validation file (default: the built-in Megatron-LM A100 table). */
    public Path validationFile;

    /**
     * auto (a cluster file for the baseline GPU when one exists), none, a built-in id or a file.
     */
    public String gpuCluster = "auto";

    /** Print the headline sensitivity table instead of one comparison. */
    public boolean sensitivity;

    /** auto (fastest valid configuration) or t,p,d[,micro-batch]. */
    public String gpuParallel = "auto";
  }

  /**
   * What a run produced.
   *
   * @param comparison the comparison, or null for a validation run
   * @param validation validation rows, or null for a comparison run
   * @param text everything printed
   */
  public record Result(Comparison comparison, List<GpuValidation.Row> validation, String text) {}

  private SimulateRunner() {}

  public static GptSpec spec(Options o) {
    GptSpec s;
    if (o.model != null && o.model.endsWith(".json")) {
      try {
        s = GptSpec.fromJson(Files.readString(Path.of(o.model)));
      } catch (IOException e) {
        throw new IllegalArgumentException(
            "--model file '" + o.model + "' cannot be read: " + e.getMessage(), e);
      }
    } else {
      s = GptSpec.preset(o.model);
    }
    if (o.seq != null) {
      s.seq(o.seq);
    }
    if (o.layers != null) {
      s.layers(o.layers);
    }
    if (o.batch != null) {
      s.batch(o.batch);
    }
    if (o.globalBatch != null) {
      s.globalBatch(o.globalBatch);
    }
    if (!(o.sparsity >= 0 && o.sparsity < 1)) {
      throw new IllegalArgumentException("--sparsity must be in [0, 1), got " + o.sparsity);
    }
    s.sparsity(o.sparsity)
        .pattern(normalisePattern(o.pattern))
        .recompute(o.recompute.toLowerCase(Locale.ROOT));
    return s.validate();
  }

  static String normalisePattern(String p) {
    if (p == null) {
      throw new IllegalArgumentException(
          "--pattern must be given: unstructured, block16 (blockN) or 2:4 (N:M)");
    }
    String k = p.toLowerCase(Locale.ROOT).trim();
    if (k.equals("dense")) {
      throw new IllegalArgumentException(
          "--pattern 'dense' is not a sparsity pattern; use --sparsity 0 for a dense model");
    }
    return k;
  }

  /** The cluster for the parallel GPU baseline, or null for the single-GPU kernel roofline. */
  static ClusterSpec cluster(Options o, GpuSpec gpu) {
    String k = o.gpuCluster == null ? "auto" : o.gpuCluster.trim();
    if (k.equalsIgnoreCase("none")) {
      return null;
    }
    if (k.equalsIgnoreCase("auto")) {
      for (String id : ClusterSpec.BUILTIN) {
        ClusterSpec c = ClusterSpec.builtin(id);
        if (c.gpu().name().equals(gpu.name())) {
          return c;
        }
      }
      return null;
    }
    if (k.endsWith(".json") || Files.exists(Path.of(k))) {
      return ClusterSpec.fromFile(Path.of(k));
    }
    return ClusterSpec.builtin(k);
  }

  /** --gpu-parallel: null for auto, else t,p,d[,micro-batch]. */
  static ParallelConfig parallel(Options o, GptSpec s) {
    String v = o.gpuParallel == null ? "auto" : o.gpuParallel.trim();
    if (v.equalsIgnoreCase("auto")) {
      return null;
    }
    String[] parts = v.split(",");
    if (parts.length < 3 || parts.length > 4) {
      throw new IllegalArgumentException(
          "--gpu-parallel '" + v + "' must be auto or t,p,d[,micro-batch], e.g. 8,1,1 or 4,2,1,2");
    }
    int[] n = new int[4];
    n[3] = 1;
    for (int i = 0; i < parts.length; i++) {
      try {
        n[i] = Integer.parseInt(parts[i].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "--gpu-parallel '" + v + "': '" + parts[i] + "' is not a whole number", e);
      }
    }
    if (n[0] * n[1] * n[2] != o.chips) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "--gpu-parallel '%s': t x p x d = %d does not equal --chips %d",
              v,
              n[0] * n[1] * n[2],
              o.chips));
    }
    return new ParallelConfig(
        n[0], n[1], n[2], n[3], s.getGlobalBatch(), 1, s.getRecompute(), true);
  }

  /**
   * Runs the comparison (or the validation with {@code validate}), prints tables and RESULT lines
   * to {@code out}, writes files under --out.
   *
   * @throws SimulationInputException bad option, model, hardware or validation file
   * @throws SimulationOutputException output files could not be written
   */
  public static Result run(Options o, PrintStream out) {
    try {
      if (o.validate) {
        return validate(o, out);
      }
      GptSpec s = spec(o);
      ChipSpec chip = o.chipFile != null ? ChipSpec.fromFile(o.chipFile) : Hardware.chip(o.chip);
      GpuSpec gpu = o.gpuFile != null ? GpuSpec.fromFile(o.gpuFile) : Hardware.gpu(o.baseline);
      ClusterSpec cluster = cluster(o, gpu);
      ParallelConfig parallel = parallel(o, s);
      if (parallel != null && cluster == null) {
        throw new IllegalArgumentException(
            "--gpu-parallel needs a GPU cluster model; none exists for '"
                + gpu.name()
                + "' (pass --gpu-cluster FILE)");
      }
      if (o.sensitivity) {
        StringBuilder b = new StringBuilder();
        b.append("SIMULATED sensitivity of the headline (one assumption changed per row):\n");
        for (Sensitivity.Row r : Sensitivity.headline(s, chip, gpu, cluster, o.chips)) {
          b.append(r.resultLine()).append('\n');
        }
        out.print(b);
        return new Result(null, null, b.toString());
      }
      Comparison c = Simulate.compare(s, chip, gpu, cluster, parallel, o.chips);
      String text = TextReport.full(c, o.maxRows);
      if (cluster == null) {
        text =
            "note: no validated parallel GPU model for "
                + gpu.name()
                + "; the baseline is the single-GPU kernel roofline (not validated)\n"
                + text;
      }
      out.print(text);
      if (o.out != null) {
        writeFiles(o, s, chip, gpu, c, out);
      }
      return new Result(c, null, text);
    } catch (SimulationInputException | SimulationOutputException e) {
      throw e;
    } catch (UncheckedIOException e) {
      throw new SimulationOutputException("cannot write output: " + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      throw new SimulationInputException(e.getMessage(), e);
    }
  }

  private static Result validate(Options o, PrintStream out) {
    GpuValidation v =
        o.validationFile != null
            ? GpuValidation.fromFile(o.validationFile)
            : GpuValidation.builtin();
    String id =
        o.gpuCluster == null || o.gpuCluster.equalsIgnoreCase("auto")
            ? v.clusterId()
            : o.gpuCluster;
    ClusterSpec cluster =
        id.endsWith(".json") ? ClusterSpec.fromFile(Path.of(id)) : ClusterSpec.builtin(id);
    List<GpuValidation.Row> rows = v.run(cluster);
    String text = ClusterReport.validation(cluster, rows);
    out.print(text);
    return new Result(null, rows, text);
  }

  private static void writeFiles(
      Options o, GptSpec s, ChipSpec chip, GpuSpec gpu, Comparison c, PrintStream out) {
    ReportJson.write(o.out.resolve("report.json"), ReportJson.toJson(c));
    ReportJson.write(
        o.out.resolve("trace.json"),
        ChromeTrace.toJson(List.of(c.dataflow(), c.kernelByKernel(), c.gpuDense())));
    Chart.writePng(
        o.out.resolve("step-time.png"),
        s.getName()
            + " sparsity "
            + s.getSparsity()
            + " on "
            + chip.name()
            + " vs dense on "
            + gpu.name(),
        List.of(c.dataflow(), c.kernelByKernel(), c.gpuDense(), c.gpuSparse()),
        List.of(
            "sparse, " + chip.name() + " dataflow",
            "sparse, " + chip.name() + " kernel-by-kernel",
            "dense, " + gpu.name() + " (kernel roofline)",
            "sparse, " + gpu.name()));
    out.println(
        "wrote "
            + o.out.resolve("report.json")
            + ", "
            + o.out.resolve("trace.json")
            + " (Perfetto / chrome://tracing), "
            + o.out.resolve("step-time.png")
            + " — all SIMULATED");
  }
}
