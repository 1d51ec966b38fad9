package org.sparseflow.dataflow.api;

import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.cluster.GpuTrainingModel;
import org.sparseflow.dataflow.cluster.GpuTrainingResult;
import org.sparseflow.dataflow.cluster.ParallelConfig;
import org.sparseflow.dataflow.cluster.ParallelSearch;
import org.sparseflow.dataflow.cluster.TransformerShape;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.sim.ChipCollectives;
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
   * As {@link #compare(GptSpec, ChipSpec, GpuSpec, ClusterSpec, ParallelConfig, int)}, no cluster.
   */
  public static Comparison compare(GptSpec sparseSpec, ChipSpec chip, GpuSpec gpu, int chips) {
    return compare(sparseSpec, chip, gpu, null, null, chips);
  }

  /**
   * Sparse spec on the chip (dataflow and kernel-by-kernel, plus gradient all-reduce) versus the
   * same spec made dense on GPUs: the validated parallel model on {@code cluster} (with {@code
   * parallel}, or the fastest valid configuration when null) and the single-GPU kernel roofline.
   */
  public static Comparison compare(
      GptSpec sparseSpec,
      ChipSpec chip,
      GpuSpec gpu,
      ClusterSpec cluster,
      ParallelConfig parallel,
      int chips) {
    long t0 = System.nanoTime();
    GptSpec dense = sparseSpec.copy().sparsity(0.0);
    OpGraph sparseGraph = graph(sparseSpec, chips);
    OpGraph denseGraph = sparseSpec.getSparsity() == 0 ? sparseGraph : graph(dense, chips);
    long tokens = (long) sparseSpec.getBatch() * sparseSpec.getSeq();
    DataflowSimulator sim = new DataflowSimulator(chip);
    SimulationReport df = sim.simulate(sparseGraph, ExecutionMode.DATAFLOW, tokens);
    SimulationReport kbk = sim.simulate(sparseGraph, ExecutionMode.KERNEL_BY_KERNEL, tokens);
    double comm =
        ChipCollectives.allReduceSeconds(chip, ChipCollectives.gradientBytes(sparseGraph), chips);
    GpuSimulator gs = new GpuSimulator(gpu);
    SimulationReport gd = gs.simulate(denseGraph);
    SimulationReport gsp = sparseGraph == denseGraph ? gd : gs.simulate(sparseGraph);
    GpuTrainingResult gc = null;
    if (cluster != null) {
      gc = baseline(dense, cluster, parallel, chips);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    return new Comparison(sparseSpec, dense, chips, df, kbk, gd, gsp, gc, comm, secs);
  }

  /**
   * Dense model on {@code gpus} GPUs of the cluster, global batch and recompute from the spec. With
   * {@code parallel} null, the fastest valid configuration is chosen (DP all-reduce overlapped with
   * backward, the best case for the GPU).
   */
  public static GpuTrainingResult baseline(
      GptSpec dense, ClusterSpec cluster, ParallelConfig parallel, int gpus) {
    TransformerShape shape = TransformerShape.of(dense);
    GpuTrainingModel model = new GpuTrainingModel(cluster);
    if (parallel == null) {
      return ParallelSearch.best(
          model, shape, gpus, dense.getGlobalBatch(), dense.getRecompute(), true);
    }
    parallel.validate(shape, gpus);
    return model.simulate(shape, parallel);
  }
}
