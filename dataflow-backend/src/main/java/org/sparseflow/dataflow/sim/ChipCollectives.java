package org.sparseflow.dataflow.sim;

import java.util.HashSet;
import java.util.Set;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;
import org.sparseflow.dataflow.hw.ChipSpec;

/**
 * Data-parallel gradient reduction between dataflow chips: a ring all-reduce of the weight
 * gradients once per optimizer step, {@code 2 (n - 1) / n x bytes / bandwidth + latency}. Inside a
 * node the ring runs over the chip links; once it spans nodes, the slower of chip link and
 * inter-node bandwidth limits it. Not overlapped with compute (conservative). SIMULATED.
 */
public final class ChipCollectives {
  private ChipCollectives() {}

  /** Bytes of weight gradients the optimizer reads (sparse gradients count kept values + index). */
  public static double gradientBytes(OpGraph g) {
    Set<Tensor> seen = new HashSet<>();
    double bytes = 0;
    for (OpNode op : g.ops()) {
      if (op.phase() != Phase.OPTIMIZER) {
        continue;
      }
      for (Tensor t : op.inputs()) {
        if (t.kind() == TensorKind.WEIGHT_GRAD && seen.add(t)) {
          bytes += t.bytes();
        }
      }
    }
    return bytes;
  }

  /** Seconds of one gradient all-reduce over {@code chips} chips. */
  public static double allReduceSeconds(ChipSpec chip, double bytes, int chips) {
    if (chips < 1) {
      throw new IllegalArgumentException("chips must be >= 1, got " + chips);
    }
    if (chips == 1) {
      return 0;
    }
    if (!chip.hasInterconnect()) {
      throw new IllegalArgumentException(
          "chip '"
              + chip.name()
              + "' has no interconnect fields (chipsPerNode, chipLinkBandwidthGBs,"
              + " interNodeBandwidthGBs, collectiveLatencyUs); they are needed to reduce gradients"
              + " over "
              + chips
              + " chips");
    }
    double bw =
        chips <= chip.chipsPerNode()
            ? chip.chipLinkBandwidth()
            : Math.min(chip.chipLinkBandwidth(), chip.interNodeBandwidth());
    return 2.0 * (chips - 1) / chips * bytes / bw + chip.collectiveLatencySeconds();
  }
}
