package org.sparseflow.dataflow.compile;

import java.util.List;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;

/**
 * Ops mapped onto the chip at the same time. Stages stream tiles to each other through on-chip
 * buffers; tensors entering or leaving the section go through off-chip memory. A single op too
 * large for the chip is split into {@code splitFactor} parts that run one after the other
 * (footprint is per part).
 */
public record Section(
    int index,
    List<FusedKernel> kernels,
    List<OpNode> ops,
    int splitFactor,
    Footprint footprint,
    List<StagePlacement> placement) {

  /** Compute and memory units given to one op (stage) of the section. */
  public record StagePlacement(OpNode op, int computeUnits, int memoryUnits, double efficiency) {}

  public Section {
    kernels = List.copyOf(kernels);
    ops = List.copyOf(ops);
    placement = List.copyOf(placement);
  }

  public Phase phase() {
    return ops.get(0).phase();
  }

  public String name() {
    return ops.size() == 1
        ? ops.get(0).name()
        : ops.get(0).name() + ".." + ops.get(ops.size() - 1).name();
  }

  public double flops() {
    double f = 0;
    for (OpNode o : ops) {
      f += o.flops();
    }
    return f;
  }
}
