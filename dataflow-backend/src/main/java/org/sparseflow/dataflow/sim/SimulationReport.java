package org.sparseflow.dataflow.sim;

import java.util.List;
import org.sparseflow.dataflow.graph.OpGraph;

/**
 * Result of simulating one training step of an op graph on one chip (all numbers SIMULATED).
 *
 * @param target chip or GPU name
 * @param targetKind "dataflow-chip" or "gpu"
 * @param mode "dataflow", "kernel-by-kernel" or "gpu-kernel-by-kernel"
 * @param model graph name
 * @param microBatches forward+backward repeats per optimizer step
 * @param stepSeconds time of one optimizer step on one chip
 * @param microBatchSeconds time of one forward+backward pass
 * @param optimizerSeconds time of the optimizer part
 * @param stepFlops FLOPs actually executed per step (sparse ops count kept weights only)
 * @param peakFlops peak rate of the target
 */
public record SimulationReport(
    String label,
    String target,
    String targetKind,
    String mode,
    String model,
    int microBatches,
    double stepSeconds,
    double microBatchSeconds,
    double optimizerSeconds,
    double stepFlops,
    double peakFlops,
    List<SectionTiming> sections,
    List<KernelTiming> kernels,
    List<String> notes) {
  public static final String SIMULATED = "SIMULATED";

  public SimulationReport {
    sections = List.copyOf(sections);
    kernels = List.copyOf(kernels);
    notes = List.copyOf(notes);
  }

  /**
   * The SIMULATED report of one optimizer step of {@code g}: {@code g.microBatches()}
   * forward+backward passes of {@code microBatchSeconds} each, then the optimizer part.
   */
  static SimulationReport ofStep(
      String target,
      String targetKind,
      String mode,
      OpGraph g,
      double microBatchSeconds,
      double optimizerSeconds,
      double peakFlops,
      List<SectionTiming> sections,
      List<KernelTiming> kernels,
      List<String> notes) {
    return new SimulationReport(
        SIMULATED,
        target,
        targetKind,
        mode,
        g.name(),
        g.microBatches(),
        microBatchSeconds * g.microBatches() + optimizerSeconds,
        microBatchSeconds,
        optimizerSeconds,
        g.stepFlops(),
        peakFlops,
        sections,
        kernels,
        notes);
  }

  /** Fraction of peak the step achieves with the FLOPs it actually executes. */
  public double utilisation() {
    return stepFlops / (stepSeconds * peakFlops);
  }

  public double stepMillis() {
    return stepSeconds * 1e3;
  }
}
