package org.sparseflow.dataflow.api;

import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.sim.SimulationReport;

/**
 * Sparse model on a dataflow chip (both execution modes) against the dense model (and, for
 * reference, the sparse model) on a GPU, same number of chips. All numbers SIMULATED.
 *
 * @param chips chips on each side (data parallel; the step time is per chip)
 * @param dataflow sparse model, dataflow mode on the chip
 * @param kernelByKernel sparse model, kernel-by-kernel mode on the chip
 * @param gpuDense dense model on the GPU (the baseline)
 * @param gpuSparse sparse model on the GPU
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
    double simulationSeconds) {

  /**
   * Baseline step time (dense on GPU) divided by the sparse step time on the chip in dataflow mode.
   */
  public double speedupVsBaseline() {
    return gpuDense.stepSeconds() / dataflow.stepSeconds();
  }

  public double speedupKernelByKernelVsBaseline() {
    return gpuDense.stepSeconds() / kernelByKernel.stepSeconds();
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
