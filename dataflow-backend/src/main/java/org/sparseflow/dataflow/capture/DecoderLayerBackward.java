package org.sparseflow.dataflow.capture;

import java.util.List;
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
    LayerOps ops = new LayerOps(e, Phase.BACKWARD, l);
    long tokens = e.tokens;
    long d = e.d;
    long ffn = e.spec.getFfn();
    Tensor dx2 = dx;
    // MLP
    e.biasBackward(p + "fc2_bias.bwd", l, dx2, L.bb2, tokens * d);
    Tensor dgl =
        e.linearBackward(
            p + "fc2", l, dx2, L.w2, L.gl, e.act(p + "dgelu", tokens, ffn), tokens * ffn * d);
    Tensor dfb = e.act(p + "dfb", tokens, ffn);
    ops.op(p + "gelu.bwd", "gelu_bp", OpKind.ACTIVATION, 12.0 * tokens * ffn, dfb, dgl, L.fb);
    e.biasBackward(p + "fc1_bias.bwd", l, dfb, L.bb1, (double) tokens * ffn);
    Tensor dh2 =
        e.linearBackward(
            p + "fc1", l, dfb, L.w1, L.h2, e.act(p + "dh2", tokens, d), tokens * d * ffn);
    Tensor dx1a = e.act(p + "dx1a", tokens, d);
    ops.layerNormBackward(p + "ln2.bwd", dx1a, dh2, L.x1, L.g2, L.b2);
    return ops.add(p + "resid2.bwd", e.act(p + "dx1", tokens, d), dx1a, dx2);
  }

  /**
   * The attention half, output projection down to the first LayerNorm; returns the input gradient.
   */
  private Tensor attention(LayerTensors L, int l, String p, Tensor dx1) {
    GptSpec s = e.spec;
    LayerOps ops = new LayerOps(e, Phase.BACKWARD, l);
    long tokens = e.tokens;
    long d = e.d;
    long hd = e.hd;
    long T = s.getSeq();
    long B = s.getBatch();
    long H = s.getHeads();
    // attention output projection
    e.biasBackward(p + "proj_bias.bwd", l, dx1, L.bo, tokens * d);
    Tensor dctxm =
        e.linearBackward(
            p + "proj", l, dx1, L.wo, L.ctxm, e.act(p + "dctxm", tokens, d), tokens * d * d);
    Tensor dctx = e.act(p + "dctx", B, H, T, hd);
    ops.layout(p + "merge_heads.bwd", "permute", List.of(dctxm), List.of(dctx));
    // attention core
    Tensor probs =
        s.getRecompute().equals("attention")
            ? forward.attention(p, l, Phase.BACKWARD, L.q, L.k, "recompute")
            : L.p;
    double bmm = 2.0 * B * H * T * T * hd;
    Tensor dp = e.act(p + "dprobs", B, H, T, T);
    ops.batchedMatmul(p + "context.bwd_dp", "matmul_bp", bmm, dp, dctx, L.v);
    Tensor dv = e.act(p + "dv", B, H, T, hd);
    ops.batchedMatmul(p + "context.bwd_dv", "matmul_bp", bmm, dv, probs, dctx);
    Tensor dsm = e.act(p + "dscores_masked", B, H, T, T);
    ops.op(p + "softmax.bwd", "softmax_bp", OpKind.SOFTMAX, 4.0 * B * H * T * T, dsm, dp, probs);
    Tensor ds = e.act(p + "dscores", B, H, T, T);
    ops.elementwise(p + "scale_mask.bwd", "mul", 1.0 * B * H * T * T, ds, dsm);
    Tensor dq = e.act(p + "dq", B, H, T, hd);
    ops.batchedMatmul(p + "scores.bwd_dq", "matmul_bp", bmm, dq, ds, L.k);
    Tensor dk = e.act(p + "dk", B, H, T, hd);
    ops.batchedMatmul(p + "scores.bwd_dk", "matmul_bp", bmm, dk, ds, L.q);
    Tensor dqkvb = e.act(p + "dqkvb", tokens, 3 * d);
    ops.layout(p + "split_heads.bwd", "concat", List.of(dq, dk, dv), List.of(dqkvb));
    e.biasBackward(p + "qkv_bias.bwd", l, dqkvb, L.bqkv, tokens * 3.0 * d);
    Tensor dh1 =
        e.linearBackward(
            p + "qkv", l, dqkvb, L.wqkv, L.h1, e.act(p + "dh1", tokens, d), tokens * d * 3 * d);
    Tensor dxa = e.act(p + "dxa", tokens, d);
    ops.layerNormBackward(p + "ln1.bwd", dxa, dh1, L.x, L.g1, L.b1);
    return ops.add(p + "resid1.bwd", e.act(p + "dx", tokens, d), dxa, dx1);
  }
}
