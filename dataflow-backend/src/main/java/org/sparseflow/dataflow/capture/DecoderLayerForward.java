package org.sparseflow.dataflow.capture;

import java.util.List;
import org.sparseflow.dataflow.graph.OpGraph;
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
    OpGraph.Builder g = e.g;
    long tokens = e.tokens;
    long d = e.d;
    long hd = e.hd;
    long T = s.getSeq(), B = s.getBatch(), H = s.getHeads(), ffn = s.getFfn();
    String p = "L" + l + ".";
    String a = tag.equals("fwd") ? "" : "." + tag;
    L.x = x;
    L.h1 = e.act(p + "h1" + a, tokens, d);
    g.op(
        p + "ln1." + tag,
        "layer_norm",
        OpKind.NORM,
        F,
        l,
        8.0 * tokens * d,
        List.of(x, L.g1, L.b1),
        List.of(L.h1));
    L.qkv =
        e.linear(
            p + "qkv." + tag,
            F,
            l,
            L.h1,
            L.wqkv,
            e.act(p + "qkv" + a, tokens, 3 * d),
            tokens * d * 3 * d);
    L.qkvb = e.act(p + "qkvb" + a, tokens, 3 * d);
    g.op(
        p + "qkv_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * 3.0 * d,
        List.of(L.qkv, L.bqkv),
        List.of(L.qkvb));
    L.q = e.act(p + "q" + a, B, H, T, hd);
    L.k = e.act(p + "k" + a, B, H, T, hd);
    L.v = e.act(p + "v" + a, B, H, T, hd);
    g.op(
        p + "split_heads." + tag,
        "permute",
        OpKind.LAYOUT,
        F,
        l,
        0,
        List.of(L.qkvb),
        List.of(L.q, L.k, L.v));
    L.p = attention(p, l, F, L.q, L.k, tag);
    Tensor ctx = e.act(p + "ctx" + a, B, H, T, hd);
    g.op(
        p + "context." + tag,
        "matmul",
        OpKind.BATCHED_MATMUL,
        F,
        l,
        2.0 * B * H * T * T * hd,
        List.of(L.p, L.v),
        List.of(ctx));
    L.ctxm = e.act(p + "ctxm" + a, tokens, d);
    g.op(
        p + "merge_heads." + tag, "permute", OpKind.LAYOUT, F, l, 0, List.of(ctx), List.of(L.ctxm));
    Tensor o =
        e.linear(
            p + "proj." + tag, F, l, L.ctxm, L.wo, e.act(p + "o" + a, tokens, d), tokens * d * d);
    L.ob = e.act(p + "ob" + a, tokens, d);
    g.op(
        p + "proj_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(o, L.bo),
        List.of(L.ob));
    L.x1 = e.act(p + "x1" + a, tokens, d);
    g.op(
        p + "resid1." + tag,
        "add",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(x, L.ob),
        List.of(L.x1));
    L.h2 = e.act(p + "h2" + a, tokens, d);
    g.op(
        p + "ln2." + tag,
        "layer_norm",
        OpKind.NORM,
        F,
        l,
        8.0 * tokens * d,
        List.of(L.x1, L.g2, L.b2),
        List.of(L.h2));
    L.f =
        e.linear(
            p + "fc1." + tag, F, l, L.h2, L.w1, e.act(p + "f" + a, tokens, ffn), tokens * d * ffn);
    L.fb = e.act(p + "fb" + a, tokens, ffn);
    g.op(
        p + "fc1_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        (double) tokens * ffn,
        List.of(L.f, L.bb1),
        List.of(L.fb));
    L.gl = e.act(p + "gelu" + a, tokens, ffn);
    g.op(
        p + "gelu." + tag,
        "gelu",
        OpKind.ACTIVATION,
        F,
        l,
        8.0 * tokens * ffn,
        List.of(L.fb),
        List.of(L.gl));
    if (tag.equals("recompute")) {
      return; // the layer output is not needed again: its gradient comes from above
    }
    Tensor f2 =
        e.linear(
            p + "fc2." + tag, F, l, L.gl, L.w2, e.act(p + "f2" + a, tokens, d), tokens * ffn * d);
    Tensor f2b = e.act(p + "f2b" + a, tokens, d);
    g.op(
        p + "fc2_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(f2, L.bb2),
        List.of(f2b));
    L.x2 = e.act(p + "x2" + a, tokens, d);
    g.op(
        p + "resid2." + tag,
        "add",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(L.x1, f2b),
        List.of(L.x2));
  }

  /** scores = q k^T, scale + causal mask, softmax; returns the probabilities. */
  Tensor attention(String p, int l, Phase ph, Tensor q, Tensor k, String tag) {
    GptSpec s = e.spec;
    OpGraph.Builder g = e.g;
    long hd = e.hd;
    long B = s.getBatch(), H = s.getHeads(), T = s.getSeq();
    Tensor sc = e.act(p + "scores." + tag, B, H, T, T);
    g.op(
        p + "scores." + tag,
        "matmul",
        OpKind.BATCHED_MATMUL,
        ph,
        l,
        2.0 * B * H * T * T * hd,
        List.of(q, k),
        List.of(sc));
    Tensor sm = e.act(p + "scores_masked." + tag, B, H, T, T);
    g.op(
        p + "scale_mask." + tag,
        "mul",
        OpKind.ELEMENTWISE,
        ph,
        l,
        2.0 * B * H * T * T,
        List.of(sc),
        List.of(sm));
    Tensor pr = e.act(p + "probs." + tag, B, H, T, T);
    g.op(
        p + "softmax." + tag,
        "softmax",
        OpKind.SOFTMAX,
        ph,
        l,
        5.0 * B * H * T * T,
        List.of(sm),
        List.of(pr));
    return pr;
  }
}
