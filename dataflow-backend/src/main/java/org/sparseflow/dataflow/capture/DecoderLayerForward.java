package org.sparseflow.dataflow.capture;

import java.util.List;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.dataflow.graph.Tensor;

/**
 * The forward pass of one decoder layer (pre-norm GPT block: LayerNorm, QKV projection, causal
 * attention, output projection, residual, LayerNorm, MLP with GELU, residual), and the creation of
 * its weights.
 */
final class DecoderLayerForward {
  private final GraphEmitter e;

  DecoderLayerForward(GraphEmitter e) {
    this.e = e;
  }

  /** Creates layer l's weights (with their sparsity) in the graph. */
  LayerTensors weights(int l) {
    GptSpec s = e.spec;
    long d = e.d;
    LayerTensors L = new LayerTensors();
    String p = "L" + l + ".";
    SparsityInfo sq = e.sp(s.isSparseQkv()),
        so = e.sp(s.isSparseProj()),
        s1 = e.sp(s.isSparseFc1()),
        s2 = e.sp(s.isSparseFc2());
    long ffn = s.getFfn();
    L.g1 = e.weight(p + "ln1.g", SparsityInfo.DENSE, d);
    L.b1 = e.weight(p + "ln1.b", SparsityInfo.DENSE, d);
    L.wqkv = e.weight(p + "Wqkv", sq, d, 3 * d);
    L.bqkv = e.weight(p + "bqkv", SparsityInfo.DENSE, 3 * d);
    L.wo = e.weight(p + "Wo", so, d, d);
    L.bo = e.weight(p + "bo", SparsityInfo.DENSE, d);
    L.g2 = e.weight(p + "ln2.g", SparsityInfo.DENSE, d);
    L.b2 = e.weight(p + "ln2.b", SparsityInfo.DENSE, d);
    L.w1 = e.weight(p + "W1", s1, d, ffn);
    L.bb1 = e.weight(p + "b1", SparsityInfo.DENSE, ffn);
    L.w2 = e.weight(p + "W2", s2, ffn, d);
    L.bb2 = e.weight(p + "b2", SparsityInfo.DENSE, d);
    return L;
  }

  /**
   * Forward of one decoder layer into L's activation fields (tag "fwd", or "recompute" inside
   * backward).
   */
  void run(LayerTensors L, int l, Tensor x, Phase F, String tag) {
    GptSpec s = e.spec;
    LayerOps ops = new LayerOps(e, F, l);
    long tokens = e.tokens;
    long d = e.d;
    long hd = e.hd;
    long T = s.getSeq(), B = s.getBatch(), H = s.getHeads(), ffn = s.getFfn();
    String p = "L" + l + ".";
    String a = tag.equals("fwd") ? "" : "." + tag;
    L.x = x;
    L.h1 = ops.layerNorm(p + "ln1." + tag, e.act(p + "h1" + a, tokens, d), x, L.g1, L.b1);
    Tensor qkv = e.act(p + "qkv" + a, tokens, 3 * d);
    L.qkv = e.linear(p + "qkv." + tag, F, l, L.h1, L.wqkv, qkv, tokens * d * 3 * d);
    Tensor qkvb = e.act(p + "qkvb" + a, tokens, 3 * d);
    L.qkvb = ops.biasAdd(p + "qkv_bias." + tag, tokens * 3.0 * d, qkvb, L.qkv, L.bqkv);
    L.q = e.act(p + "q" + a, B, H, T, hd);
    L.k = e.act(p + "k" + a, B, H, T, hd);
    L.v = e.act(p + "v" + a, B, H, T, hd);
    ops.layout(p + "split_heads." + tag, "permute", List.of(L.qkvb), List.of(L.q, L.k, L.v));
    L.p = attention(p, l, F, L.q, L.k, tag);
    Tensor ctx = e.act(p + "ctx" + a, B, H, T, hd);
    ops.batchedMatmul(p + "context." + tag, "matmul", 2.0 * B * H * T * T * hd, ctx, L.p, L.v);
    L.ctxm = e.act(p + "ctxm" + a, tokens, d);
    ops.layout(p + "merge_heads." + tag, "permute", List.of(ctx), List.of(L.ctxm));
    Tensor o =
        e.linear(
            p + "proj." + tag, F, l, L.ctxm, L.wo, e.act(p + "o" + a, tokens, d), tokens * d * d);
    L.ob = ops.biasAdd(p + "proj_bias." + tag, tokens * d, e.act(p + "ob" + a, tokens, d), o, L.bo);
    L.x1 = ops.add(p + "resid1." + tag, e.act(p + "x1" + a, tokens, d), x, L.ob);
    L.h2 = ops.layerNorm(p + "ln2." + tag, e.act(p + "h2" + a, tokens, d), L.x1, L.g2, L.b2);
    Tensor f = e.act(p + "f" + a, tokens, ffn);
    L.f = e.linear(p + "fc1." + tag, F, l, L.h2, L.w1, f, tokens * d * ffn);
    Tensor fb = e.act(p + "fb" + a, tokens, ffn);
    L.fb = ops.biasAdd(p + "fc1_bias." + tag, (double) tokens * ffn, fb, L.f, L.bb1);
    Tensor gl = e.act(p + "gelu" + a, tokens, ffn);
    L.gl = ops.op(p + "gelu." + tag, "gelu", OpKind.ACTIVATION, 8.0 * tokens * ffn, gl, L.fb);
    if (tag.equals("recompute")) {
      return; // the layer output is not needed again: its gradient comes from above
    }
    Tensor f2 =
        e.linear(
            p + "fc2." + tag, F, l, L.gl, L.w2, e.act(p + "f2" + a, tokens, d), tokens * ffn * d);
    Tensor f2b =
        ops.biasAdd(p + "fc2_bias." + tag, tokens * d, e.act(p + "f2b" + a, tokens, d), f2, L.bb2);
    L.x2 = ops.add(p + "resid2." + tag, e.act(p + "x2" + a, tokens, d), L.x1, f2b);
  }

  /** scores = q k^T, scale + causal mask, softmax; returns the probabilities. */
  Tensor attention(String p, int l, Phase ph, Tensor q, Tensor k, String tag) {
    GptSpec s = e.spec;
    LayerOps ops = new LayerOps(e, ph, l);
    long hd = e.hd;
    long B = s.getBatch(), H = s.getHeads(), T = s.getSeq();
    Tensor sc = e.act(p + "scores." + tag, B, H, T, T);
    ops.batchedMatmul(p + "scores." + tag, "matmul", 2.0 * B * H * T * T * hd, sc, q, k);
    Tensor sm = e.act(p + "scores_masked." + tag, B, H, T, T);
    ops.elementwise(p + "scale_mask." + tag, "mul", 2.0 * B * H * T * T, sm, sc);
    Tensor pr = e.act(p + "probs." + tag, B, H, T, T);
    return ops.op(p + "softmax." + tag, "softmax", OpKind.SOFTMAX, 5.0 * B * H * T * T, pr, sm);
  }
}
