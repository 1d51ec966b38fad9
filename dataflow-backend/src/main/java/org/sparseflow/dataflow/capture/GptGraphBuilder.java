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
 * Builds the op graph of one GPT training step (forward, backward, Adam) from a {@link GptSpec},
 * shapes only. Activations and weights are bf16, optimizer state (fp32 master copy + Adam moments)
 * fp32: standard mixed precision. FLOP counts per op are written next to each op below; matmuls
 * count 2 FLOPs per multiply-add and, for sparse weights, only kept weights (dX and the masked dW
 * alike).
 */
public final class GptGraphBuilder {
  private final GraphEmitter e;

  private GptGraphBuilder(GptSpec spec) {
    this.e = new GraphEmitter(spec);
  }

  /**
   * One training step on one chip: fwd+bwd of one micro-batch (repeated microBatches times) plus
   * the optimizer.
   */
  public static OpGraph build(GptSpec spec, int microBatches) {
    GptGraphBuilder b = new GptGraphBuilder(spec);
    b.e.g.microBatches(microBatches);
    return b.buildGraph();
  }

  private OpGraph buildGraph() {
    GptSpec s = e.spec;
    OpGraph.Builder g = e.g;
    long tokens = e.tokens;
    long d = e.d;
    DecoderLayerForward forward = new DecoderLayerForward(e);
    DecoderLayerBackward backward = new DecoderLayerBackward(e, forward);
    long V = s.getVocab();
    long T = s.getSeq();
    long B = s.getBatch();
    long H = s.getHeads();
    long ffn = s.getFfn();
    Phase F = Phase.FORWARD;
    Phase BW = Phase.BACKWARD;

    // ---- forward ----
    Tensor ids = g.tensor("tokens", new long[] {tokens}, DType.INT32, TensorKind.INPUT);
    Tensor labels = g.tensor("labels", new long[] {tokens}, DType.INT32, TensorKind.INPUT);
    Tensor wte = e.weight("wte", SparsityInfo.DENSE, V, d);
    Tensor wpe = e.weight("wpe", SparsityInfo.DENSE, T, d);
    Tensor emb = e.act("emb", tokens, d);
    g.op("embed.fwd", "gather", OpKind.GATHER, F, -1, 0, List.of(ids, wte), List.of(emb));
    Tensor x = e.act("x0", tokens, d);
    g.op(
        "pos_add.fwd", "add", OpKind.ELEMENTWISE, F, -1, tokens * d, List.of(emb, wpe), List.of(x));

    List<LayerTensors> saved = new ArrayList<>();
    for (int l = 0; l < s.getLayers(); l++) {
      LayerTensors L = forward.weights(l);
      forward.run(L, l, x, F, "fwd");
      saved.add(L);
      x = L.x2;
    }
    Tensor gf = e.weight("lnf.g", SparsityInfo.DENSE, d);
    Tensor bf = e.weight("lnf.b", SparsityInfo.DENSE, d);
    Tensor hf = e.act("hf", tokens, d);
    g.op(
        "lnf.fwd",
        "layer_norm",
        OpKind.NORM,
        F,
        -1,
        8.0 * tokens * d,
        List.of(x, gf, bf),
        List.of(hf));
    Tensor logits = e.act("logits", tokens, V);
    g.op(
        "lm_head.fwd",
        "matmul",
        OpKind.LINEAR,
        F,
        -1,
        2.0 * tokens * d * V,
        List.of(hf, wte),
        List.of(logits));
    Tensor loss = g.tensor("loss", new long[] {1}, DType.FP32, TensorKind.ACTIVATION);
    g.op(
        "loss.fwd",
        "softmax_cross_entropy",
        OpKind.LOSS,
        F,
        -1,
        5.0 * tokens * V,
        List.of(logits, labels),
        List.of(loss));

    // ---- backward ----
    Tensor dlogits = e.act("dlogits", tokens, V);
    g.op(
        "loss.bwd",
        "softmax_cross_entropy_bp",
        OpKind.LOSS,
        BW,
        -1,
        3.0 * tokens * V,
        List.of(logits, labels, loss),
        List.of(dlogits));
    Tensor dhf = e.act("dhf", tokens, d);
    g.op(
        "lm_head.bwd_dx",
        "matmul_bp",
        OpKind.LINEAR,
        BW,
        -1,
        2.0 * tokens * d * V,
        List.of(dlogits, wte),
        List.of(dhf));
    Tensor dwteHead = g.tensor("dwte_head", wte.shape(), GraphEmitter.ACT, TensorKind.WEIGHT_GRAD);
    g.op(
        "lm_head.bwd_dw",
        "matmul_bp",
        OpKind.LINEAR,
        BW,
        -1,
        2.0 * tokens * d * V,
        List.of(hf, dlogits),
        List.of(dwteHead));
    Tensor dx = e.act("dx_top", tokens, d);
    Tensor dgf = e.grad(gf), dbf = e.grad(bf);
    g.op(
        "lnf.bwd",
        "layer_norm_bp",
        OpKind.NORM,
        BW,
        -1,
        10.0 * tokens * d,
        List.of(dhf, x, gf),
        List.of(dx, dgf, dbf));

    for (int l = s.getLayers() - 1; l >= 0; l--) {
      dx = backward.run(saved.get(l), l, dx);
    }
    Tensor dwpe = e.grad(wpe);
    g.op(
        "pos_add.bwd",
        "reduce_sum",
        OpKind.REDUCTION,
        BW,
        -1,
        tokens * d,
        List.of(dx),
        List.of(dwpe));
    Tensor dwteEmb = g.tensor("dwte_emb", wte.shape(), GraphEmitter.ACT, TensorKind.WEIGHT_GRAD);
    g.op(
        "embed.bwd",
        "scatter_add",
        OpKind.GATHER,
        BW,
        -1,
        tokens * d,
        List.of(dx, ids),
        List.of(dwteEmb));
    Tensor dwte = e.grad(wte);
    g.op(
        "wte_grad_sum.bwd",
        "add",
        OpKind.ELEMENTWISE,
        BW,
        -1,
        (double) V * d,
        List.of(dwteHead, dwteEmb),
        List.of(dwte));

    optimizer();
    return g.build();
  }

  /** Adam with fp32 master weights, one update per parameter tensor. */
  private void optimizer() {
    OpGraph.Builder g = e.g;
    for (int i = 0; i < e.params.size(); i++) {
      Tensor w = e.params.get(i);
      Tensor dw = e.findGrad(w);
      Tensor master =
          g.tensor(
              w.name() + ".master",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      Tensor m =
          g.tensor(
              w.name() + ".m",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      Tensor v =
          g.tensor(
              w.name() + ".v",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      Tensor wNew =
          g.tensor(w.name() + "'", w.shape(), GraphEmitter.ACT, TensorKind.WEIGHT, w.sparsity());
      Tensor masterNew =
          g.tensor(
              w.name() + ".master'",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      Tensor mNew =
          g.tensor(
              w.name() + ".m'",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      Tensor vNew =
          g.tensor(
              w.name() + ".v'",
              w.shape(),
              GraphEmitter.STATE,
              TensorKind.OPTIMIZER_STATE,
              w.sparsity());
      double kept = w.elements() * w.sparsity().density();
      g.op(
          "adam." + w.name(),
          "adam_updater",
          OpKind.OPTIMIZER,
          Phase.OPTIMIZER,
          GraphEmitter.layerOf(w.name()),
          12.0 * kept,
          List.of(dw, master, m, v),
          List.of(wNew, masterNew, mNew, vNew),
          w.sparsity());
    }
  }
}
