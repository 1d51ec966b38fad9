package org.sparseflow.dataflow.compile;

import java.util.List;
import org.sparseflow.dataflow.graph.OpNode;
import org.sparseflow.dataflow.graph.Phase;

/** A group of ops fused into one kernel by a rule ("single" when no rule matched). */
public record FusedKernel(int index, String rule, List<OpNode> ops) {
  public FusedKernel {
    if (ops.isEmpty()) {
      throw new IllegalArgumentException("a fused kernel needs at least one op");
    }
    ops = List.copyOf(ops);
  }

  public String name() {
    return ops.size() == 1
        ? ops.get(0).name()
        : ops.get(0).name() + ".." + ops.get(ops.size() - 1).name();
  }

  public Phase phase() {
    return ops.get(0).phase();
  }

  public double flops() {
    double f = 0;
    for (OpNode o : ops) {
      f += o.flops();
    }
    return f;
  }
}
