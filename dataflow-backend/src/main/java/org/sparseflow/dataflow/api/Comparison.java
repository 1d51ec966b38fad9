package org.sparseflow.dataflow.api;

import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.cluster.GpuTrainingResult;
import org.sparseflow.dataflow.sim.SimulationReport;

/**
 * Sparse model on a dataflow chip (both execution modes) against the dense model on GPUs, same
 * number of chips. All numbers SIMULATED.
 *
 * @param chips chips on each side
 * @param dataflow sparse model, dataflow mode on the chip (per chip, data parallel)
 * @param kernelByKernel sparse model, kernel-by-kernel mode on the chip
 * @param gpuDense dense model, kernel-level roofline of one GPU (no parallelism, no communication;
 *     kept for the per-kernel trace, not validated)
 * @param gpuSparse sparse model, kernel-level roofline of one GPU
 * @param gpuCluster dense model on the validated parallel GPU model (the baseline), or null when no
 *     cluster file exists for the GPU
 * @param chipCommSeconds data-parallel gradient all-reduce per step on the chip side
 * @param simulationSeconds wall-clock time the simulations took (measured on this machine)
 */
public record Comparison(
    GptSpec sparseSpec,
    GptSpec denseSpec,
    int chips,
    SimulationReport dataflow,
    SimulationReport kernelByKernel,
    SimulationReport gpuDense,
    SimulationReport gpuSparse,
    GpuTrainingResult gpuCluster,
    double chipCommSeconds,
    double simulationSeconds) {

  /** Step time of the dense baseline: validated cluster model when present, else the roofline. */
  public double baselineStepSeconds() {
    return gpuCluster != null ? gpuCluster.iterationSeconds() : gpuDense.stepSeconds();
  }

  /** Sparse step time on the chip in dataflow mode, gradient all-reduce included. */
  public double dataflowStepSeconds() {
    return dataflow.stepSeconds() + chipCommSeconds;
  }

  public double kernelByKernelStepSeconds() {
    return kernelByKernel.stepSeconds() + chipCommSeconds;
  }

  /** Baseline step time (dense on GPUs) over the sparse step time on the chip, dataflow mode. */
  public double speedupVsBaseline() {
    return baselineStepSeconds() / dataflowStepSeconds();
  }

  public double speedupKernelByKernelVsBaseline() {
    return baselineStepSeconds() / kernelByKernelStepSeconds();
  }

  /** The same ratio against the old single-GPU kernel roofline (unvalidated, for comparison). */
  public double speedupVsKernelRoofline() {
    return gpuDense.stepSeconds() / dataflowStepSeconds();
  }

  /** Dataflow over kernel-by-kernel on the same chip (fusion + pipelining share). */
  public double dataflowOverKernelByKernel() {
    return kernelByKernel.stepSeconds() / dataflow.stepSeconds();
  }

  /** Dense FLOPs per step over sparse FLOPs per step (the sparsity share). */
  public double flopReduction() {
    return gpuDense.stepFlops() / dataflow.stepFlops();
  }
}
