package org.sparseflow.dataflow.graph;

import java.util.Collections;
import java.util.List;

/**
 * One op of the captured graph: op name (ND4J/SameDiff op name or a model-level name), kind, phase,
 * the tensors it reads and writes, its arithmetic work and, for SparseFlow ops, sparsity metadata.
 */
public final class OpNode {
  private final int id;
  private final String name;
  private final String opName;
  private final OpKind kind;
  private final Phase phase;
  private final int layer;
  private final double flops;
  private final List<Tensor> inputs;
  private final List<Tensor> outputs;
  private final SparsityInfo sparsity;

  OpNode(
      int id,
      String name,
      String opName,
      OpKind kind,
      Phase phase,
      int layer,
      double flops,
      List<Tensor> inputs,
      List<Tensor> outputs,
      SparsityInfo sparsity) {
    if (!(flops >= 0) || Double.isInfinite(flops)) {
      throw new IllegalArgumentException(
          "flops of op '" + name + "' must be finite and >= 0, got " + flops);
    }
    this.id = id;
    this.name = name;
    this.opName = opName;
    this.kind = kind;
    this.phase = phase;
    this.layer = layer;
    this.flops = flops;
    this.inputs = List.copyOf(inputs);
    this.outputs = List.copyOf(outputs);
    this.sparsity = sparsity == null ? SparsityInfo.DENSE : sparsity;
  }

  public int id() {
    return id;
  }

  /** Unique, readable name (e.g. "L3.fc1.fwd"). */
  public String name() {
    return name;
  }

  /** Operation type name (e.g. "matmul", "add", "sparseflow_sparse_matmul", "layer_norm"). */
  public String opName() {
    return opName;
  }

  public OpKind kind() {
    return kind;
  }

  public Phase phase() {
    return phase;
  }

  /** Transformer layer index, -1 when not inside a layer. */
  public int layer() {
    return layer;
  }

  /** Floating-point operations actually needed (sparse ops count only kept weights). */
  public double flops() {
    return flops;
  }

  public List<Tensor> inputs() {
    return Collections.unmodifiableList(inputs);
  }

  public List<Tensor> outputs() {
    return Collections.unmodifiableList(outputs);
  }

  public SparsityInfo sparsity() {
    return sparsity;
  }

  public double inputBytes() {
    double b = 0;
    for (Tensor t : inputs) {
      b += t.bytes();
    }
    return b;
  }

  public double outputBytes() {
    double b = 0;
    for (Tensor t : outputs) {
      b += t.bytes();
    }
    return b;
  }

  /**
   * Bytes of input t that this op actually reads: a gather (embedding lookup) reads only the rows
   * it returns, not the whole table; every other op reads its inputs whole.
   */
  public double readBytes(Tensor t) {
    if (kind == OpKind.GATHER && t.kind() == TensorKind.WEIGHT) {
      return Math.min(t.bytes(), outputBytes());
    }
    return t.bytes();
  }

  /** Bytes this op moves when it runs as its own kernel (all inputs read, all outputs written). */
  public double kernelBytes() {
    return inputBytes() + outputBytes();
  }

  @Override
  public String toString() {
    return name + "(" + opName + "," + kind + ")";
  }
}
