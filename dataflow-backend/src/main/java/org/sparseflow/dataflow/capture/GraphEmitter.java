package org.sparseflow.dataflow.capture;

import java.util.ArrayList;
import java.util.List;
import org.sparseflow.dataflow.graph.DType;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;

/**
 * The graph under construction and the GPT's sizes, shared by the parts that emit the embedding,
 * the decoder layers and the optimizer. Activations and weights are bf16, optimizer state fp32.
 */
final class GraphEmitter {
  static final DType ACT = DType.BF16;
  static final DType STATE = DType.FP32;

  final GptSpec spec;
  final OpGraph.Builder g;
  final List<Tensor> params = new ArrayList<>();
  final List<Tensor> grads = new ArrayList<>();
  final long tokens;
  final long d;
  final long hd;
  private final SparsityInfo sparse;

  GraphEmitter(GptSpec spec) {
    this.spec = spec.validate();
    this.g = OpGraph.builder(spec.getName());
    this.tokens = (long) spec.getBatch() * spec.getSeq();
    this.d = spec.getDModel();
    this.hd = d / spec.getHeads();
    this.sparse =
        spec.getSparsity() > 0
            ? new SparsityInfo(1.0 - spec.getSparsity(), spec.getPattern())
            : SparsityInfo.DENSE;
  }

  /** A linear layer's forward y = x W (2 FLOPs per multiply-add, kept weights only); returns y. */
  Tensor linear(String name, Phase phase, int layer, Tensor x, Tensor w, Tensor y, long macs) {
    SparsityInfo si = w.sparsity();
    g.op(
        name,
        linOp(si),
        linKind(si),
        phase,
        layer,
        2.0 * macs * si.density(),
        List.of(x, w),
        List.of(y),
        si);
    return y;
  }

  /**
   * A linear layer's backward: dx = dy W^T into {@code dx}, then dW = x^T dy into a new gradient
   * tensor, each 2 FLOPs per multiply-add on the kept weights; returns dx.
   */
  Tensor linearBackward(
      String name, int layer, Tensor dy, Tensor w, Tensor x, Tensor dx, long macs) {
    SparsityInfo si = w.sparsity();
    double flops = 2.0 * macs * si.density();
    String op = linOp(si) + "_bp";
    g.op(
        name + ".bwd_dx",
        op,
        linKind(si),
        Phase.BACKWARD,
        layer,
        flops,
        List.of(dy, w),
        List.of(dx),
        si);
    Tensor dw = grad(w);
    g.op(
        name + ".bwd_dw",
        op,
        linKind(si),
        Phase.BACKWARD,
        layer,
        flops,
        List.of(x, dy),
        List.of(dw),
        si);
    return dx;
  }

  /** A bias's gradient: the sum of dy over the tokens, into a new gradient tensor. */
  void biasBackward(String name, int layer, Tensor dy, Tensor bias, double flops) {
    Tensor db = grad(bias);
    g.op(
        name,
        "reduce_sum",
        OpKind.REDUCTION,
        Phase.BACKWARD,
        layer,
        flops,
        List.of(dy),
        List.of(db));
  }

  Tensor act(String name, long... shape) {
    return g.tensor(name, shape, ACT, TensorKind.ACTIVATION);
  }

  Tensor weight(String name, SparsityInfo sp, long... shape) {
    Tensor w = g.tensor(name, shape, ACT, TensorKind.WEIGHT, sp);
    params.add(w);
    return w;
  }

  Tensor grad(Tensor w) {
    Tensor t = g.tensor("d" + w.name(), w.shape(), ACT, TensorKind.WEIGHT_GRAD, w.sparsity());
    grads.add(t);
    return t;
  }

  SparsityInfo sp(boolean sparseLayer) {
    return sparseLayer ? sparse : SparsityInfo.DENSE;
  }

  static OpKind linKind(SparsityInfo si) {
    return si.isSparse() ? OpKind.SPARSE_LINEAR : OpKind.LINEAR;
  }

  static String linOp(SparsityInfo si) {
    return si.isSparse() ? "sparseflow_sparse_matmul" : "matmul";
  }

  Tensor findGrad(Tensor w) {
    String want = "d" + w.name();
    for (Tensor t : grads) {
      if (t.name().equals(want)) {
        return t;
      }
    }
    throw new IllegalStateException("no gradient for " + w.name());
  }

  static int layerOf(String name) {
    if (name.startsWith("L")) {
      int dot = name.indexOf('.');
      try {
        return Integer.parseInt(name.substring(1, dot));
      } catch (RuntimeException e) {
        return -1;
      }
    }
    return -1;
  }
}
