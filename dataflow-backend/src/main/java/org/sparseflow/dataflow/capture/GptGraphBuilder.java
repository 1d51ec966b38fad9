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

    LayerOps fwd = new LayerOps(e, F, -1);
    LayerOps bwd = new LayerOps(e, BW, -1);
    double headFlops = 2.0 * tokens * d * V;

    // ---- forward ----
    Tensor ids = g.tensor("tokens", new long[] {tokens}, DType.INT32, TensorKind.INPUT);
    Tensor labels = g.tensor("labels", new long[] {tokens}, DType.INT32, TensorKind.INPUT);
    Tensor wte = e.weight("wte", SparsityInfo.DENSE, V, d);
    Tensor wpe = e.weight("wpe", SparsityInfo.DENSE, T, d);
    Tensor emb = fwd.op("embed.fwd", "gather", OpKind.GATHER, 0, e.act("emb", tokens, d), ids, wte);
    Tensor x = fwd.add("pos_add.fwd", e.act("x0", tokens, d), emb, wpe);

    List<LayerTensors> saved = new ArrayList<>();
    for (int l = 0; l < s.getLayers(); l++) {
      LayerTensors L = forward.weights(l);
      forward.run(L, l, x, F, "fwd");
      saved.add(L);
      x = L.x2;
    }
    Tensor gf = e.weight("lnf.g", SparsityInfo.DENSE, d);
    Tensor bf = e.weight("lnf.b", SparsityInfo.DENSE, d);
    Tensor hf = fwd.layerNorm("lnf.fwd", e.act("hf", tokens, d), x, gf, bf);
    Tensor logits = e.act("logits", tokens, V);
    fwd.op("lm_head.fwd", "matmul", OpKind.LINEAR, headFlops, logits, hf, wte);
    Tensor loss = g.tensor("loss", new long[] {1}, DType.FP32, TensorKind.ACTIVATION);
    fwd.op(
        "loss.fwd", "softmax_cross_entropy", OpKind.LOSS, 5.0 * tokens * V, loss, logits, labels);

    // ---- backward ----
    Tensor dlogits = e.act("dlogits", tokens, V);
    bwd.op(
        "loss.bwd",
        "softmax_cross_entropy_bp",
        OpKind.LOSS,
        3.0 * tokens * V,
        dlogits,
        logits,
        labels,
        loss);
    Tensor dhf = e.act("dhf", tokens, d);
    bwd.op("lm_head.bwd_dx", "matmul_bp", OpKind.LINEAR, headFlops, dhf, dlogits, wte);
    Tensor dwteHead = g.tensor("dwte_head", wte.shape(), GraphEmitter.ACT, TensorKind.WEIGHT_GRAD);
    bwd.op("lm_head.bwd_dw", "matmul_bp", OpKind.LINEAR, headFlops, dwteHead, hf, dlogits);
    Tensor dx = bwd.layerNormBackward("lnf.bwd", e.act("dx_top", tokens, d), dhf, x, gf, bf);

    for (int l = s.getLayers() - 1; l >= 0; l--) {
      dx = backward.run(saved.get(l), l, dx);
    }
    bwd.op("pos_add.bwd", "reduce_sum", OpKind.REDUCTION, tokens * d, e.grad(wpe), dx);
    Tensor dwteEmb = g.tensor("dwte_emb", wte.shape(), GraphEmitter.ACT, TensorKind.WEIGHT_GRAD);
    bwd.op("embed.bwd", "scatter_add", OpKind.GATHER, tokens * d, dwteEmb, dx, ids);
    bwd.elementwise("wte_grad_sum.bwd", "add", (double) V * d, e.grad(wte), dwteHead, dwteEmb);

    optimizer();
    return g.build();
  }

  /** Adam with fp32 master weights, one update per parameter tensor. */
  private void optimizer() {
    OpGraph.Builder g = e.g;
    for (int i = 0; i < e.params.size(); i++) {
      Tensor w = e.params.get(i);
      Tensor dw = e.findGrad(w);
      Tensor master = state(w.name() + ".master", w);
      Tensor m = state(w.name() + ".m", w);
      Tensor v = state(w.name() + ".v", w);
      Tensor wNew =
          g.tensor(w.name() + "'", w.shape(), GraphEmitter.ACT, TensorKind.WEIGHT, w.sparsity());
      Tensor masterNew = state(w.name() + ".master'", w);
      Tensor mNew = state(w.name() + ".m'", w);
      Tensor vNew = state(w.name() + ".v'", w);
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

  /** An fp32 optimizer-state tensor shaped (and sparse) like the weight {@code w}. */
  private Tensor state(String name, Tensor w) {
    return e.g.tensor(
        name, w.shape(), GraphEmitter.STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
  }
}
