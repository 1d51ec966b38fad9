package org.sparseflow.dataflow.api;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.hw.Hardware;
import org.sparseflow.dataflow.report.Chart;
import org.sparseflow.dataflow.report.ChromeTrace;
import org.sparseflow.dataflow.report.ReportJson;
import org.sparseflow.dataflow.report.TextReport;

/**
 * Everything behind the {@code sparseflow simulate} command: options bean, validation, simulation,
 * printing and output files. The picocli command only copies its options here.
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
  }

  private SimulateRunner() {}

  public static GptSpec spec(Options o) {
    GptSpec s;
    if (o.model != null && o.model.endsWith(".json")) {
      try {
        s = GptSpec.fromJson(java.nio.file.Files.readString(Path.of(o.model)));
      } catch (java.io.IOException e) {
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

  /**
   * Runs the comparison, prints tables and RESULT lines, writes files under --out. Returns the exit
   * code.
   */
  public static int run(Options o, PrintStream out, PrintStream err) {
    try {
      GptSpec s = spec(o);
      ChipSpec chip = o.chipFile != null ? ChipSpec.fromFile(o.chipFile) : Hardware.chip(o.chip);
      GpuSpec gpu = o.gpuFile != null ? GpuSpec.fromFile(o.gpuFile) : Hardware.gpu(o.baseline);
      Comparison c = Simulate.compare(s, chip, gpu, o.chips);
      out.print(TextReport.full(c, o.maxRows));
      if (o.out != null) {
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
                "dense, " + gpu.name() + " (baseline)", "sparse, " + gpu.name()));
        out.println(
            "wrote "
                + o.out.resolve("report.json")
                + ", "
                + o.out.resolve("trace.json")
                + " (Perfetto / chrome://tracing), "
                + o.out.resolve("step-time.png")
                + " — all SIMULATED");
      }
      return 0;
    } catch (IllegalArgumentException e) {
      err.println("simulate: " + e.getMessage());
      return 2;
    }
  }
}
