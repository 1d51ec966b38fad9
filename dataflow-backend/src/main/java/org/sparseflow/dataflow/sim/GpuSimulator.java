package org.sparseflow.dataflow.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;
import org.sparseflow.dataflow.hw.GpuSpec;

/**
 * Kernel-by-kernel roofline on a GPU: every op is one kernel, {@code time = max(execFlops / (peak *
 * eff(shape)), bytes / (bandwidth * memEff)) + launch}. Matmul efficiency comes from the GPU file's
 * curve; other ops use the non-tensor-core rate. Unstructured sparse weights run as dense GEMMs
 * (zeros included) unless the GPU file says otherwise; block and 2:4 patterns use their own
 * efficiency entries. SIMULATED.
 */
public final class GpuSimulator {
  private final GpuSpec gpu;

  public GpuSimulator(GpuSpec gpu) {
    this.gpu = gpu;
  }

  public SimulationReport simulate(OpGraph g) {
    List<SectionTiming> st = new ArrayList<>();
    List<KernelTiming> kt = new ArrayList<>();
    double micro = 0, opt = 0, modelBytes = 0;
    for (OpNode op : g.ops()) {
      double[] cb = computeAndBytes(op);
      double compute = cb[0];
      double memory = cb[1] / (gpu.memBandwidth() * gpu.memoryEfficiency());
      double total = Math.max(compute, memory) + gpu.launchOverheadSeconds();
      String bound = compute >= memory ? "compute" : "memory";
      if (gpu.launchOverheadSeconds() > Math.max(compute, memory)) {
        bound = "launch";
      }
      int repeats = op.phase() == Phase.OPTIMIZER ? 1 : g.microBatches();
      double util = op.flops() / (total * gpu.peakFlops());
      st.add(
          new SectionTiming(
              st.size(),
              op.name(),
              op.phase().name(),
              1,
              1,
              1,
              1,
              repeats,
              op.flops(),
              compute,
              0,
              memory,
              0,
              0,
              gpu.launchOverheadSeconds(),
              total,
              bound,
              util,
              0,
              0,
              0,
              cb[1]));
      kt.add(
          new KernelTiming(
              kt.size(),
              op.name(),
              "single",
              st.size() - 1,
              1,
              repeats,
              op.flops(),
              total,
              bound,
              util));
      if (op.phase() == Phase.OPTIMIZER) {
        opt += total;
        for (Tensor t : op.inputs()) {
          modelBytes += denseAwareBytes(t);
        }
        for (Tensor t : op.outputs()) {
          if (t.kind() == TensorKind.WEIGHT) {
            modelBytes += denseAwareBytes(t);
          }
        }
      } else {
        micro += total;
      }
    }
    List<String> notes = new ArrayList<>();
    notes.add("All times are SIMULATED (kernel-by-kernel roofline), not measured on a GPU.");
    if (modelBytes > gpu.memCapacityBytes()) {
      notes.add(
          String.format(
              Locale.ROOT,
              "Weights + gradients + optimizer state need %.1f GB > %.0f GB on one %s: a real run"
                  + " shards them (ZeRO / tensor parallel); that communication is not modelled.",
              modelBytes / 1e9,
              gpu.memCapacityBytes() / 1e9,
              gpu.name()));
    }
    return SimulationReport.ofStep(
        gpu.name(), "gpu", "gpu-kernel-by-kernel", g, micro, opt, gpu.peakFlops(), st, kt, notes);
  }

  /**
   * Bytes of a tensor as the GPU stores it: sparse tensors stay dense when unstructured runs dense.
   */
  private double denseAwareBytes(Tensor t) {
    SparsityInfo s = t.sparsity();
    if (s.isSparse() && s.family().equals("unstructured") && gpu.unstructuredRunsDense()) {
      return (double) t.elements() * t.dtype().bytes();
    }
    return t.bytes();
  }

  /** [compute seconds, bytes moved]. */
  double[] computeAndBytes(OpNode op) {
    double bytes = 0;
    for (Tensor t : op.inputs()) {
      bytes +=
          Math.min(
              denseAwareBytes(t),
              op.readBytes(t) * denseAwareBytes(t) / Math.max(1e-30, t.bytes()));
    }
    for (Tensor t : op.outputs()) {
      bytes += denseAwareBytes(t);
      // weight gradients accumulate over micro-batches: read-modify-write
      if (t.kind() == TensorKind.WEIGHT_GRAD && op.kind().isMatmul()) {
        bytes += denseAwareBytes(t);
      }
    }
    double compute;
    if (op.kind() == OpKind.LINEAR || op.kind() == OpKind.BATCHED_MATMUL) {
      compute = op.flops() / (gpu.peakFlops() * gpu.matmulEfficiency(op.flops()));
    } else if (op.kind() == OpKind.SPARSE_LINEAR) {
      SparsityInfo s = op.sparsity();
      double dense = op.flops() / s.density();
      double eff = gpu.matmulEfficiency(dense);
      switch (s.family()) {
        case "unstructured":
          compute =
              gpu.unstructuredRunsDense()
                  ? dense / (gpu.peakFlops() * eff)
                  : op.flops() / (gpu.peakFlops() * eff * gpu.unstructuredSparseEfficiency());
          break;
        case "block":
          compute = op.flops() / (gpu.peakFlops() * eff * gpu.blockSparseEfficiency());
          break;
        case "nm":
          compute =
              s.pattern().equals("2:4")
                  ? dense / (gpu.peakFlops() * eff * gpu.nm24Speedup())
                  : dense / (gpu.peakFlops() * eff);
          break;
        default:
          compute = dense / (gpu.peakFlops() * eff);
      }
    } else {
      compute = op.flops() / gpu.vectorFlops();
    }
    return new double[] {compute, bytes};
  }
}
