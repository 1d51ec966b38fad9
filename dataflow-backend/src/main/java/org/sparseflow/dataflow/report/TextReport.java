package org.sparseflow.dataflow.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.api.Comparison;
import org.sparseflow.dataflow.sim.KernelTiming;
import org.sparseflow.dataflow.sim.SectionTiming;
import org.sparseflow.dataflow.sim.SimulationReport;

/** Plain-text tables and RESULT lines. Every block is labelled SIMULATED. */
public final class TextReport {
  private TextReport() {}

  private static String ms(double s) {
    return String.format(Locale.ROOT, "%.3f", s * 1e3);
  }

  private static String cut(String s, int n) {
    return s.length() <= n ? s : s.substring(0, n - 2) + "..";
  }

  /** Per-section table (first maxRows rows) of a report. */
  public static String sections(SimulationReport r, int maxRows) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "SIMULATED sections: %s, mode=%s, model=%s (times per micro-batch in ms; x%d"
                + " micro-batches per step)%n",
            r.target(),
            r.mode(),
            r.model(),
            r.microBatches()));
    b.append(
        String.format(
            Locale.ROOT,
            "%4s %-44s %-9s %4s %4s %5s %9s %9s %9s %9s %9s %9s %-11s %6s %8s%n",
            "#",
            "section",
            "phase",
            "ops",
            "stg",
            "split",
            "total",
            "compute",
            "network",
            "offchip",
            "setup",
            "fill+sw",
            "bound",
            "util%",
            "onchipMB"));
    int n = 0;
    for (SectionTiming s : r.sections()) {
      if (n++ >= maxRows) {
        b.append(
            String.format(
                Locale.ROOT,
                "  ... %d more sections in the JSON report%n",
                r.sections().size() - maxRows));
        break;
      }
      b.append(
          String.format(
              Locale.ROOT,
              "%4d %-44s %-9s %4d %4d %5d %9s %9s %9s %9s %9s %9s %-11s %6.1f %8.1f%n",
              s.index(),
              cut(s.name(), 44),
              s.phase(),
              s.ops(),
              s.stages(),
              s.splitFactor(),
              ms(s.totalS()),
              ms(s.computeS()),
              ms(s.networkS()),
              ms(s.offChipS()),
              ms(s.setupS()),
              ms(s.fillDrainS() + s.switchS()),
              s.bound(),
              100 * s.utilisation(),
              s.onChipBytes() / 1e6));
    }
    return b.toString();
  }

  /** Fused kernels sorted by their share of the step (top maxRows). */
  public static String kernels(SimulationReport r, int maxRows) {
    List<KernelTiming> ks = new ArrayList<>(r.kernels());
    ks.sort(Comparator.comparingDouble((KernelTiming k) -> -k.timeS() * k.repeats()));
    double step = r.stepSeconds();
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "SIMULATED fused kernels: %s, mode=%s (top %d of %d by share of the step)%n",
            r.target(),
            r.mode(),
            Math.min(maxRows, ks.size()),
            ks.size()));
    b.append(
        String.format(
            Locale.ROOT,
            "%-52s %-24s %4s %5s %10s %7s %-11s %6s%n",
            "kernel",
            "rule",
            "ops",
            "sect",
            "ms/run",
            "step%",
            "bound",
            "util%"));
    for (int i = 0; i < Math.min(maxRows, ks.size()); i++) {
      KernelTiming k = ks.get(i);
      b.append(
          String.format(
              Locale.ROOT,
              "%-52s %-24s %4d %5d %10s %7.2f %-11s %6.1f%n",
              cut(k.name(), 52),
              cut(k.rule(), 24),
              k.ops(),
              k.section(),
              ms(k.timeS()),
              100 * k.timeS() * k.repeats() / step,
              k.bound(),
              100 * k.utilisation()));
    }
    return b.toString();
  }

  public static String summary(SimulationReport r) {
    return String.format(
        Locale.ROOT,
        "SIMULATED %-10s %-20s step=%.1f ms (micro-batch %.3f ms x %d + optimizer %.1f ms), %.3g"
            + " FLOP/step, utilisation %.1f%%%n",
        r.target(),
        r.mode(),
        r.stepMillis(),
        r.microBatchSeconds() * 1e3,
        r.microBatches(),
        r.optimizerSeconds() * 1e3,
        r.stepFlops(),
        100 * r.utilisation());
  }

  /** The RESULT line of a dataflow-chip report (either execution mode). */
  private static String chipLine(String model, SimulationReport r) {
    return String.format(
        Locale.ROOT,
        "RESULT dataflow %s mode=%s chip=%s step_ms=%.3f simulated=true",
        model,
        r.mode(),
        r.target(),
        r.stepMillis());
  }

  /** The RESULT line of a one-GPU baseline report ({@code variant} dense or sparse). */
  private static String baselineLine(String model, String variant, SimulationReport r) {
    return String.format(
        Locale.ROOT,
        "RESULT dataflow %s baseline=%s variant=%s step_ms=%.3f simulated=true",
        model,
        r.target(),
        variant,
        r.stepMillis());
  }

  /** The machine-readable lines required by the simulate command and the benchmark. */
  public static List<String> resultLines(Comparison c) {
    String m = c.sparseSpec().getName();
    List<String> out = new ArrayList<>();
    out.add(chipLine(m, c.dataflow()));
    out.add(chipLine(m, c.kernelByKernel()));
    out.add(baselineLine(m, "dense", c.gpuDense()));
    out.add(baselineLine(m, "sparse", c.gpuSparse()));
    if (c.gpuCluster() != null) {
      out.add(
          String.format(
              Locale.ROOT,
              "RESULT dataflow %s baseline=%s variant=dense-parallel config=%s step_ms=%.3f"
                  + " model_tflops_per_gpu=%.1f mfu=%.3f simulated=true",
              m,
              c.gpuCluster().cluster(),
              c.gpuCluster().config().toString().replace(' ', ','),
              c.gpuCluster().iterationSeconds() * 1e3,
              c.gpuCluster().modelTflopsPerGpu(),
              c.gpuCluster().modelFlopsUtilisation()));
    }
    out.add(
        String.format(
            Locale.ROOT,
            "RESULT dataflow %s chip_gradient_allreduce_ms=%.3f chips=%d simulated=true",
            m,
            c.chipCommSeconds() * 1e3,
            c.chips()));
    out.add(
        String.format(
            Locale.ROOT,
            "RESULT dataflow %s speedup_vs_baseline=%.3f kbk_speedup_vs_baseline=%.3f"
                + " dataflow_over_kbk=%.3f flop_reduction=%.3f speedup_vs_kernel_roofline=%.3f"
                + " baseline_model=%s chips=%d simulated=true",
            m,
            c.speedupVsBaseline(),
            c.speedupKernelByKernelVsBaseline(),
            c.dataflowOverKernelByKernel(),
            c.flopReduction(),
            c.speedupVsKernelRoofline(),
            c.gpuCluster() != null ? "parallel-gpu" : "kernel-roofline",
            c.chips()));
    return out;
  }

  /** Full text: summaries, section and kernel tables, notes, RESULT lines. */
  public static String full(Comparison c, int maxRows) {
    StringBuilder b = new StringBuilder();
    b.append(
        "==== SIMULATED — SparseFlow dataflow simulator (analytical model, not a measurement)"
            + " ====\n");
    b.append("model: ")
        .append(c.sparseSpec())
        .append(", chips per side: ")
        .append(c.chips())
        .append('\n');
    b.append(summary(c.dataflow()))
        .append(summary(c.kernelByKernel()))
        .append(summary(c.gpuDense()))
        .append(summary(c.gpuSparse()));
    if (c.gpuCluster() != null) {
      b.append(ClusterReport.summary(c.gpuCluster()));
    }
    b.append(
        String.format(
            Locale.ROOT,
            "SIMULATED chip side: gradient all-reduce over %d chips %.1f ms per step (added to both"
                + " chip modes)%n",
            c.chips(),
            c.chipCommSeconds() * 1e3));
    b.append('\n')
        .append(sections(c.dataflow(), maxRows))
        .append('\n')
        .append(kernels(c.dataflow(), Math.min(maxRows, 25)))
        .append('\n');
    List<String> notes = new ArrayList<>(c.dataflow().notes());
    for (String n : c.gpuDense().notes()) {
      if (!notes.contains(n)) {
        notes.add(n);
      }
    }
    for (String n : notes) {
      b.append("note: ").append(n).append('\n');
    }
    b.append(
        String.format(
            Locale.ROOT,
            "simulation wall time (measured on this machine): %.3f s%n",
            c.simulationSeconds()));
    for (String l : resultLines(c)) {
      b.append(l).append('\n');
    }
    return b.toString();
  }
}
