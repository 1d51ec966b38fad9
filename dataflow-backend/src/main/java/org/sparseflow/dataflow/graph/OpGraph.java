package org.sparseflow.dataflow.graph;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Op graph of one training step (or one recorded iteration): ops in a valid execution order, each
 * tensor written by at most one op. Built with {@link Builder}; immutable afterwards.
 */
public final class OpGraph {
  private final String name;
  private final List<OpNode> ops;
  private final List<Tensor> tensors;
  private final Map<Integer, OpNode> producer;
  private final Map<Integer, List<OpNode>> consumers;

  /** How many times the fwd+bwd part runs per step (gradient accumulation); optimizer runs once. */
  private final int microBatches;

  private OpGraph(String name, List<OpNode> ops, List<Tensor> tensors, int microBatches) {
    this.name = name;
    this.ops = List.copyOf(ops);
    this.tensors = List.copyOf(tensors);
    this.microBatches = microBatches;
    Map<Integer, OpNode> prod = new HashMap<>();
    Map<Integer, List<OpNode>> cons = new HashMap<>();
    for (OpNode op : ops) {
      for (Tensor t : op.inputs()) {
        cons.computeIfAbsent(t.id(), k -> new ArrayList<>()).add(op);
      }
      for (Tensor t : op.outputs()) {
        prod.put(t.id(), op);
      }
    }
    this.producer = prod;
    this.consumers = cons;
  }

  public String name() {
    return name;
  }

  public List<OpNode> ops() {
    return ops;
  }

  public List<Tensor> tensors() {
    return tensors;
  }

  public int microBatches() {
    return microBatches;
  }

  /** The op that writes t, or null for graph inputs (weights, data). */
  public OpNode producer(Tensor t) {
    return producer.get(t.id());
  }

  public List<OpNode> consumers(Tensor t) {
    List<OpNode> c = consumers.get(t.id());
    return c == null ? List.of() : Collections.unmodifiableList(c);
  }

  public double totalFlops() {
    double f = 0;
    for (OpNode op : ops) {
      f += op.flops();
    }
    return f;
  }

  /** FLOPs of one optimizer step including all micro-batches. */
  public double stepFlops() {
    double f = 0;
    for (OpNode op : ops) {
      f += op.phase() == Phase.OPTIMIZER ? op.flops() : op.flops() * microBatches;
    }
    return f;
  }

  public OpGraph withMicroBatches(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("microBatches must be >= 1, got " + n);
    }
    return new OpGraph(name, ops, tensors, n);
  }

  public static Builder builder(String name) {
    return new Builder(name);
  }

  /** Builds a graph op by op, in execution order. */
  public static final class Builder {
    private final String name;
    private final List<OpNode> ops = new ArrayList<>();
    private final List<Tensor> tensors = new ArrayList<>();
    private final Set<Integer> written = new HashSet<>();
    private final Set<String> opNames = new HashSet<>();
    private int microBatches = 1;

    private Builder(String name) {
      this.name = name;
    }

    public Tensor tensor(String tname, long[] shape, DType dtype, TensorKind kind) {
      return tensor(tname, shape, dtype, kind, SparsityInfo.DENSE);
    }

    public Tensor tensor(
        String tname, long[] shape, DType dtype, TensorKind kind, SparsityInfo sparsity) {
      Tensor t = new Tensor(tensors.size(), tname, shape, dtype, kind, sparsity);
      tensors.add(t);
      return t;
    }

    public OpNode op(
        String opNameUnique,
        String opType,
        OpKind kind,
        Phase phase,
        int layer,
        double flops,
        List<Tensor> in,
        List<Tensor> out) {
      return op(opNameUnique, opType, kind, phase, layer, flops, in, out, SparsityInfo.DENSE);
    }

    public OpNode op(
        String opNameUnique,
        String opType,
        OpKind kind,
        Phase phase,
        int layer,
        double flops,
        List<Tensor> in,
        List<Tensor> out,
        SparsityInfo sparsity) {
      String unique = opNameUnique;
      int suffix = 1;
      while (!opNames.add(unique)) {
        unique = opNameUnique + "#" + (suffix++);
      }
      for (Tensor t : out) {
        if (!written.add(t.id())) {
          throw new IllegalArgumentException(
              "tensor '"
                  + t.name()
                  + "' is written by more than one op (second: '"
                  + unique
                  + "')");
        }
      }
      OpNode n =
          new OpNode(ops.size(), unique, opType, kind, phase, layer, flops, in, out, sparsity);
      ops.add(n);
      return n;
    }

    public Builder microBatches(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("microBatches must be >= 1, got " + n);
      }
      this.microBatches = n;
      return this;
    }

    public int opCount() {
      return ops.size();
    }

    public OpGraph build() {
      return new OpGraph(name, ops, tensors, microBatches);
    }
  }
}
