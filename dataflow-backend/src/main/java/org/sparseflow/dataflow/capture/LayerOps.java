package org.sparseflow.dataflow.capture;

import java.util.List;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;

/**
 * Emits the dense ops of one phase of one layer ({@code layer} -1: outside the decoder layers):
 * each helper adds the op that writes {@code out} from its inputs and returns {@code out}. The
 * caller creates {@code out} (as an argument, so before the op, as the graph expects). FLOPs are
 * those written next to each helper.
 */
final class LayerOps {
  private final GraphEmitter e;
  private final OpGraph.Builder g;
  private final Phase phase;
  private final int layer;

  LayerOps(GraphEmitter e, Phase phase, int layer) {
    this.e = e;
    this.g = e.g;
    this.phase = phase;
    this.layer = layer;
  }

  /** An op of {@code type} and {@code kind} reading {@code in}, writing {@code out}. */
  Tensor op(String name, String type, OpKind kind, double flops, Tensor out, Tensor... in) {
    g.op(name, type, kind, phase, layer, flops, List.of(in), List.of(out));
    return out;
  }

  /** An elementwise op (add, biasadd, mul). */
  Tensor elementwise(String name, String type, double flops, Tensor out, Tensor... in) {
    return op(name, type, OpKind.ELEMENTWISE, flops, out, in);
  }

  /** A bias add out = x + bias, {@code flops} one per output element. */
  Tensor biasAdd(String name, double flops, Tensor out, Tensor x, Tensor bias) {
    return elementwise(name, "biasadd", flops, out, x, bias);
  }

  /** A residual add out = a + b: one FLOP per element. */
  Tensor add(String name, Tensor out, Tensor a, Tensor b) {
    return elementwise(name, "add", e.tokens * e.d, out, a, b);
  }

  /** A batched (per head) matmul of {@code type} (matmul or matmul_bp) reading a and b. */
  Tensor batchedMatmul(String name, String type, double flops, Tensor out, Tensor a, Tensor b) {
    return op(name, type, OpKind.BATCHED_MATMUL, flops, out, a, b);
  }

  /** A layout change (permute, concat) of {@code in} into {@code out}: no FLOPs. */
  void layout(String name, String type, List<Tensor> in, List<Tensor> out) {
    g.op(name, type, OpKind.LAYOUT, phase, layer, 0, in, out);
  }

  /** LayerNorm forward over d_model: 8 FLOPs per element. */
  Tensor layerNorm(String name, Tensor out, Tensor x, Tensor gamma, Tensor beta) {
    return op(name, "layer_norm", OpKind.NORM, 8.0 * e.tokens * e.d, out, x, gamma, beta);
  }

  /**
   * LayerNorm backward: dx and new gradients of gamma and beta from dy and the forward input x; 10
   * FLOPs per element. Returns dx.
   */
  Tensor layerNormBackward(String name, Tensor dx, Tensor dy, Tensor x, Tensor gamma, Tensor beta) {
    Tensor dg = e.grad(gamma);
    Tensor db = e.grad(beta);
    g.op(
        name,
        "layer_norm_bp",
        OpKind.NORM,
        phase,
        layer,
        10.0 * e.tokens * e.d,
        List.of(dy, x, gamma),
        List.of(dx, dg, db));
    return dx;
  }
}
