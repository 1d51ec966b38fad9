package org.sparseflow.dataflow.api;

import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.sim.DataflowSimulator;
import org.sparseflow.dataflow.sim.ExecutionMode;
import org.sparseflow.dataflow.sim.GpuSimulator;
import org.sparseflow.dataflow.sim.SimulationReport;

/** Entry points used by the {@code simulate} command and the calibration benchmark. */
public final class Simulate {
  private Simulate() {}

  /** Micro-batches per optimizer step on each chip: ceil(globalBatch / (chips * batch)). */
  public static int microBatches(GptSpec spec, int chips) {
    if (chips < 1) {
      throw new IllegalArgumentException("chips must be >= 1, got " + chips);
    }
    long per = (long) chips * spec.getBatch();
    return (int) Math.max(1, (spec.getGlobalBatch() + per - 1) / per);
  }

  public static OpGraph graph(GptSpec spec, int chips) {
    return GptGraphBuilder.build(spec, microBatches(spec, chips));
  }

  /**
   * Sparse spec on the chip (dataflow and kernel-by-kernel) versus the same spec made dense on the
   * GPU.
   */
  public static Comparison compare(GptSpec sparseSpec, ChipSpec chip, GpuSpec gpu, int chips) {
    long t0 = System.nanoTime();
    GptSpec dense = sparseSpec.copy().sparsity(0.0);
    OpGraph sparseGraph = graph(sparseSpec, chips);
    OpGraph denseGraph = sparseSpec.getSparsity() == 0 ? sparseGraph : graph(dense, chips);
    long tokens = (long) sparseSpec.getBatch() * sparseSpec.getSeq();
    DataflowSimulator sim = new DataflowSimulator(chip);
    SimulationReport df = sim.simulate(sparseGraph, ExecutionMode.DATAFLOW, tokens);
    SimulationReport kbk = sim.simulate(sparseGraph, ExecutionMode.KERNEL_BY_KERNEL, tokens);
    GpuSimulator gs = new GpuSimulator(gpu);
    SimulationReport gd = gs.simulate(denseGraph);
    SimulationReport gsp = sparseGraph == denseGraph ? gd : gs.simulate(sparseGraph);
    double secs = (System.nanoTime() - t0) / 1e9;
    return new Comparison(sparseSpec, dense, chips, df, kbk, gd, gsp, secs);
  }
}
