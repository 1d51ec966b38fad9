package org.sparseflow.dataflow.capture;

import java.util.List;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.Tensor;

/**
 * The backward pass of one decoder layer: the gradients of its MLP, attention projection, attention
 * core and QKV projection, in reverse order of the forward, with the recomputation that the spec's
 * activation checkpointing asks for.
 */
final class DecoderLayerBackward {
  private final GraphEmitter e;
  private final DecoderLayerForward forward;

  DecoderLayerBackward(GraphEmitter e, DecoderLayerForward forward) {
    this.e = e;
    this.forward = forward;
  }

  /** Emits layer l's backward given the gradient dx of its output; returns its input's gradient. */
  Tensor run(LayerTensors saved, int l, Tensor dx) {
    LayerTensors L = saved;
    if (e.spec.getRecompute().equals("full")) {
      // activation checkpointing: only the layer input was kept; rerun the layer forward first
      LayerTensors R = saved.copyWeights();
      forward.run(R, l, L.x, Phase.BACKWARD, "recompute");
      L = R;
    }
    String p = "L" + l + ".";
    Tensor dx1 = mlp(L, l, p, dx);
    return attention(L, l, p, dx1);
  }

  /**
   * The MLP half, fc2 down to the second LayerNorm; returns the gradient of the attention output.
   */
  private Tensor mlp(LayerTensors L, int l, String p, Tensor dx) {
    OpGraph.Builder g = e.g;
    long tokens = e.tokens;
    long d = e.d;
    long ffn = e.spec.getFfn();
    Phase BW = Phase.BACKWARD;
    Tensor dx2 = dx;
    // MLP
    e.biasBackward(p + "fc2_bias.bwd", l, dx2, L.bb2, tokens * d);
    Tensor dgl =
        e.linearBackward(
            p + "fc2", l, dx2, L.w2, L.gl, e.act(p + "dgelu", tokens, ffn), tokens * ffn * d);
    Tensor dfb = e.act(p + "dfb", tokens, ffn);
    g.op(
        p + "gelu.bwd",
        "gelu_bp",
        OpKind.ACTIVATION,
        BW,
        l,
        12.0 * tokens * ffn,
        List.of(dgl, L.fb),
        List.of(dfb));
    e.biasBackward(p + "fc1_bias.bwd", l, dfb, L.bb1, (double) tokens * ffn);
    Tensor dh2 =
        e.linearBackward(
            p + "fc1", l, dfb, L.w1, L.h2, e.act(p + "dh2", tokens, d), tokens * d * ffn);
    Tensor dx1a = e.act(p + "dx1a", tokens, d);
    Tensor dg2 = e.grad(L.g2), dbe2 = e.grad(L.b2);
    g.op(
        p + "ln2.bwd",
        "layer_norm_bp",
        OpKind.NORM,
        BW,
        l,
        10.0 * tokens * d,
        List.of(dh2, L.x1, L.g2),
        List.of(dx1a, dg2, dbe2));
    Tensor dx1 = e.act(p + "dx1", tokens, d);
    g.op(
        p + "resid2.bwd",
        "add",
        OpKind.ELEMENTWISE,
        BW,
        l,
        tokens * d,
        List.of(dx1a, dx2),
        List.of(dx1));
    return dx1;
  }

  /**
   * The attention half, output projection down to the first LayerNorm; returns the input gradient.
   */
  private Tensor attention(LayerTensors L, int l, String p, Tensor dx1) {
    GptSpec s = e.spec;
    OpGraph.Builder g = e.g;
    long tokens = e.tokens;
    long d = e.d;
    long hd = e.hd;
    long T = s.getSeq();
    long B = s.getBatch();
    long H = s.getHeads();
    Phase BW = Phase.BACKWARD;
    // attention output projection
    e.biasBackward(p + "proj_bias.bwd", l, dx1, L.bo, tokens * d);
    Tensor dctxm =
        e.linearBackward(
            p + "proj", l, dx1, L.wo, L.ctxm, e.act(p + "dctxm", tokens, d), tokens * d * d);
    Tensor dctx = e.act(p + "dctx", B, H, T, hd);
    g.op(p + "merge_heads.bwd", "permute", OpKind.LAYOUT, BW, l, 0, List.of(dctxm), List.of(dctx));
    // attention core
    Tensor probs =
        s.getRecompute().equals("attention")
            ? forward.attention(p, l, BW, L.q, L.k, "recompute")
            : L.p;
    Tensor dp = e.act(p + "dprobs", B, H, T, T);
    g.op(
        p + "context.bwd_dp",
        "matmul_bp",
        OpKind.BATCHED_MATMUL,
        BW,
        l,
        2.0 * B * H * T * T * hd,
        List.of(dctx, L.v),
        List.of(dp));
    Tensor dv = e.act(p + "dv", B, H, T, hd);
    g.op(
        p + "context.bwd_dv",
        "matmul_bp",
        OpKind.BATCHED_MATMUL,
        BW,
        l,
        2.0 * B * H * T * T * hd,
        List.of(probs, dctx),
        List.of(dv));
    Tensor dsm = e.act(p + "dscores_masked", B, H, T, T);
    g.op(
        p + "softmax.bwd",
        "softmax_bp",
        OpKind.SOFTMAX,
        BW,
        l,
        4.0 * B * H * T * T,
        List.of(dp, probs),
        List.of(dsm));
    Tensor ds = e.act(p + "dscores", B, H, T, T);
    g.op(
        p + "scale_mask.bwd",
        "mul",
        OpKind.ELEMENTWISE,
        BW,
        l,
        1.0 * B * H * T * T,
        List.of(dsm),
        List.of(ds));
    Tensor dq = e.act(p + "dq", B, H, T, hd);
    g.op(
        p + "scores.bwd_dq",
        "matmul_bp",
        OpKind.BATCHED_MATMUL,
        BW,
        l,
        2.0 * B * H * T * T * hd,
        List.of(ds, L.k),
        List.of(dq));
    Tensor dk = e.act(p + "dk", B, H, T, hd);
    g.op(
        p + "scores.bwd_dk",
        "matmul_bp",
        OpKind.BATCHED_MATMUL,
        BW,
        l,
        2.0 * B * H * T * T * hd,
        List.of(ds, L.q),
        List.of(dk));
    Tensor dqkvb = e.act(p + "dqkvb", tokens, 3 * d);
    g.op(
        p + "split_heads.bwd",
        "concat",
        OpKind.LAYOUT,
        BW,
        l,
        0,
        List.of(dq, dk, dv),
        List.of(dqkvb));
    e.biasBackward(p + "qkv_bias.bwd", l, dqkvb, L.bqkv, tokens * 3.0 * d);
    Tensor dh1 =
        e.linearBackward(
            p + "qkv", l, dqkvb, L.wqkv, L.h1, e.act(p + "dh1", tokens, d), tokens * d * 3 * d);
    Tensor dxa = e.act(p + "dxa", tokens, d);
    Tensor dg1 = e.grad(L.g1), dbe1 = e.grad(L.b1);
    g.op(
        p + "ln1.bwd",
        "layer_norm_bp",
        OpKind.NORM,
        BW,
        l,
        10.0 * tokens * d,
        List.of(dh1, L.x, L.g1),
        List.of(dxa, dg1, dbe1));
    Tensor dxIn = e.act(p + "dx", tokens, d);
    g.op(
        p + "resid1.bwd",
        "add",
        OpKind.ELEMENTWISE,
        BW,
        l,
        tokens * d,
        List.of(dxa, dx1),
        List.of(dxIn));
    return dxIn;
  }
}
