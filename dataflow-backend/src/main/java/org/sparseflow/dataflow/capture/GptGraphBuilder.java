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
  private static final DType ACT = DType.BF16;
  private static final DType STATE = DType.FP32;

  private final GptSpec s;
  private final OpGraph.Builder g;
  private final List<Tensor> params = new ArrayList<>();
  private final List<Tensor> grads = new ArrayList<>();
  private final long tokens;
  private final long d;
  private final long hd;
  private final SparsityInfo sparse;

  private GptGraphBuilder(GptSpec spec) {
    this.s = spec.validate();
    this.g = OpGraph.builder(spec.getName());
    this.tokens = (long) spec.getBatch() * spec.getSeq();
    this.d = spec.getDModel();
    this.hd = d / spec.getHeads();
    this.sparse =
        spec.getSparsity() > 0
            ? new SparsityInfo(1.0 - spec.getSparsity(), spec.getPattern())
            : SparsityInfo.DENSE;
  }

  /**
   * One training step on one chip: fwd+bwd of one micro-batch (repeated microBatches times) plus
   * the optimizer.
   */
  public static OpGraph build(GptSpec spec, int microBatches) {
    GptGraphBuilder b = new GptGraphBuilder(spec);
    b.g.microBatches(microBatches);
    return b.buildGraph();
  }

  private Tensor act(String name, long... shape) {
    return g.tensor(name, shape, ACT, TensorKind.ACTIVATION);
  }

  private Tensor weight(String name, SparsityInfo sp, long... shape) {
    Tensor w = g.tensor(name, shape, ACT, TensorKind.WEIGHT, sp);
    params.add(w);
    return w;
  }

  private Tensor grad(Tensor w) {
    Tensor t = g.tensor("d" + w.name(), w.shape(), ACT, TensorKind.WEIGHT_GRAD, w.sparsity());
    grads.add(t);
    return t;
  }

  private SparsityInfo sp(boolean sparseLayer) {
    return sparseLayer ? sparse : SparsityInfo.DENSE;
  }

  private static OpKind linKind(SparsityInfo si) {
    return si.isSparse() ? OpKind.SPARSE_LINEAR : OpKind.LINEAR;
  }

  private static String linOp(SparsityInfo si) {
    return si.isSparse() ? "sparseflow_sparse_matmul" : "matmul";
  }

  /** Per-layer state kept between the forward and the backward pass. */
  private static final class LayerFwd {
    Tensor x,
        g1,
        b1,
        h1,
        wqkv,
        bqkv,
        qkv,
        qkvb,
        q,
        k,
        v,
        p,
        ctxm,
        wo,
        bo,
        ob,
        x1,
        g2,
        b2,
        h2,
        w1,
        bb1,
        f,
        fb,
        gl,
        w2,
        bb2,
        x2;

    LayerFwd copyWeights() {
      LayerFwd c = new LayerFwd();
      c.g1 = g1;
      c.b1 = b1;
      c.wqkv = wqkv;
      c.bqkv = bqkv;
      c.wo = wo;
      c.bo = bo;
      c.g2 = g2;
      c.b2 = b2;
      c.w1 = w1;
      c.bb1 = bb1;
      c.w2 = w2;
      c.bb2 = bb2;
      return c;
    }
  }

  private OpGraph buildGraph() {
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
    Tensor wte = weight("wte", SparsityInfo.DENSE, V, d);
    Tensor wpe = weight("wpe", SparsityInfo.DENSE, T, d);
    Tensor emb = act("emb", tokens, d);
    g.op("embed.fwd", "gather", OpKind.GATHER, F, -1, 0, List.of(ids, wte), List.of(emb));
    Tensor x = act("x0", tokens, d);
    g.op(
        "pos_add.fwd", "add", OpKind.ELEMENTWISE, F, -1, tokens * d, List.of(emb, wpe), List.of(x));

    List<LayerFwd> saved = new ArrayList<>();
    for (int l = 0; l < s.getLayers(); l++) {
      LayerFwd L = layerWeights(l);
      layerForward(L, l, x, F, "fwd");
      saved.add(L);
      x = L.x2;
    }
    Tensor gf = weight("lnf.g", SparsityInfo.DENSE, d);
    Tensor bf = weight("lnf.b", SparsityInfo.DENSE, d);
    Tensor hf = act("hf", tokens, d);
    g.op(
        "lnf.fwd",
        "layer_norm",
        OpKind.NORM,
        F,
        -1,
        8.0 * tokens * d,
        List.of(x, gf, bf),
        List.of(hf));
    Tensor logits = act("logits", tokens, V);
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
    Tensor dlogits = act("dlogits", tokens, V);
    g.op(
        "loss.bwd",
        "softmax_cross_entropy_bp",
        OpKind.LOSS,
        BW,
        -1,
        3.0 * tokens * V,
        List.of(logits, labels, loss),
        List.of(dlogits));
    Tensor dhf = act("dhf", tokens, d);
    g.op(
        "lm_head.bwd_dx",
        "matmul_bp",
        OpKind.LINEAR,
        BW,
        -1,
        2.0 * tokens * d * V,
        List.of(dlogits, wte),
        List.of(dhf));
    Tensor dwteHead = g.tensor("dwte_head", wte.shape(), ACT, TensorKind.WEIGHT_GRAD);
    g.op(
        "lm_head.bwd_dw",
        "matmul_bp",
        OpKind.LINEAR,
        BW,
        -1,
        2.0 * tokens * d * V,
        List.of(hf, dlogits),
        List.of(dwteHead));
    Tensor dx = act("dx_top", tokens, d);
    Tensor dgf = grad(gf), dbf = grad(bf);
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
      LayerFwd L = saved.get(l);
      if (s.getRecompute().equals("full")) {
        // activation checkpointing: only the layer input was kept; rerun the layer forward first
        LayerFwd R = L.copyWeights();
        layerForward(R, l, L.x, BW, "recompute");
        L = R;
      }
      String p = "L" + l + ".";
      SparsityInfo sq = L.wqkv.sparsity(),
          so = L.wo.sparsity(),
          s1 = L.w1.sparsity(),
          s2 = L.w2.sparsity();
      Tensor dx2 = dx;
      // MLP
      Tensor db2 = grad(L.bb2);
      g.op(
          p + "fc2_bias.bwd",
          "reduce_sum",
          OpKind.REDUCTION,
          BW,
          l,
          tokens * d,
          List.of(dx2),
          List.of(db2));
      Tensor dgl = act(p + "dgelu", tokens, ffn);
      g.op(
          p + "fc2.bwd_dx",
          linOp(s2) + "_bp",
          linKind(s2),
          BW,
          l,
          2.0 * tokens * ffn * d * s2.density(),
          List.of(dx2, L.w2),
          List.of(dgl),
          s2);
      Tensor dw2 = grad(L.w2);
      g.op(
          p + "fc2.bwd_dw",
          linOp(s2) + "_bp",
          linKind(s2),
          BW,
          l,
          2.0 * tokens * ffn * d * s2.density(),
          List.of(L.gl, dx2),
          List.of(dw2),
          s2);
      Tensor dfb = act(p + "dfb", tokens, ffn);
      g.op(
          p + "gelu.bwd",
          "gelu_bp",
          OpKind.ACTIVATION,
          BW,
          l,
          12.0 * tokens * ffn,
          List.of(dgl, L.fb),
          List.of(dfb));
      Tensor db1 = grad(L.bb1);
      g.op(
          p + "fc1_bias.bwd",
          "reduce_sum",
          OpKind.REDUCTION,
          BW,
          l,
          (double) tokens * ffn,
          List.of(dfb),
          List.of(db1));
      Tensor dh2 = act(p + "dh2", tokens, d);
      g.op(
          p + "fc1.bwd_dx",
          linOp(s1) + "_bp",
          linKind(s1),
          BW,
          l,
          2.0 * tokens * d * ffn * s1.density(),
          List.of(dfb, L.w1),
          List.of(dh2),
          s1);
      Tensor dw1 = grad(L.w1);
      g.op(
          p + "fc1.bwd_dw",
          linOp(s1) + "_bp",
          linKind(s1),
          BW,
          l,
          2.0 * tokens * d * ffn * s1.density(),
          List.of(L.h2, dfb),
          List.of(dw1),
          s1);
      Tensor dx1a = act(p + "dx1a", tokens, d);
      Tensor dg2 = grad(L.g2), dbe2 = grad(L.b2);
      g.op(
          p + "ln2.bwd",
          "layer_norm_bp",
          OpKind.NORM,
          BW,
          l,
          10.0 * tokens * d,
          List.of(dh2, L.x1, L.g2),
          List.of(dx1a, dg2, dbe2));
      Tensor dx1 = act(p + "dx1", tokens, d);
      g.op(
          p + "resid2.bwd",
          "add",
          OpKind.ELEMENTWISE,
          BW,
          l,
          tokens * d,
          List.of(dx1a, dx2),
          List.of(dx1));
      // attention output projection
      Tensor dbo = grad(L.bo);
      g.op(
          p + "proj_bias.bwd",
          "reduce_sum",
          OpKind.REDUCTION,
          BW,
          l,
          tokens * d,
          List.of(dx1),
          List.of(dbo));
      Tensor dctxm = act(p + "dctxm", tokens, d);
      g.op(
          p + "proj.bwd_dx",
          linOp(so) + "_bp",
          linKind(so),
          BW,
          l,
          2.0 * tokens * d * d * so.density(),
          List.of(dx1, L.wo),
          List.of(dctxm),
          so);
      Tensor dwo = grad(L.wo);
      g.op(
          p + "proj.bwd_dw",
          linOp(so) + "_bp",
          linKind(so),
          BW,
          l,
          2.0 * tokens * d * d * so.density(),
          List.of(L.ctxm, dx1),
          List.of(dwo),
          so);
      Tensor dctx = act(p + "dctx", B, H, T, hd);
      g.op(
          p + "merge_heads.bwd", "permute", OpKind.LAYOUT, BW, l, 0, List.of(dctxm), List.of(dctx));
      // attention core
      Tensor probs =
          s.getRecompute().equals("attention")
              ? attentionForward(p, l, BW, L.q, L.k, "recompute")
              : L.p;
      Tensor dp = act(p + "dprobs", B, H, T, T);
      g.op(
          p + "context.bwd_dp",
          "matmul_bp",
          OpKind.BATCHED_MATMUL,
          BW,
          l,
          2.0 * B * H * T * T * hd,
          List.of(dctx, L.v),
          List.of(dp));
      Tensor dv = act(p + "dv", B, H, T, hd);
      g.op(
          p + "context.bwd_dv",
          "matmul_bp",
          OpKind.BATCHED_MATMUL,
          BW,
          l,
          2.0 * B * H * T * T * hd,
          List.of(probs, dctx),
          List.of(dv));
      Tensor dsm = act(p + "dscores_masked", B, H, T, T);
      g.op(
          p + "softmax.bwd",
          "softmax_bp",
          OpKind.SOFTMAX,
          BW,
          l,
          4.0 * B * H * T * T,
          List.of(dp, probs),
          List.of(dsm));
      Tensor ds = act(p + "dscores", B, H, T, T);
      g.op(
          p + "scale_mask.bwd",
          "mul",
          OpKind.ELEMENTWISE,
          BW,
          l,
          1.0 * B * H * T * T,
          List.of(dsm),
          List.of(ds));
      Tensor dq = act(p + "dq", B, H, T, hd);
      g.op(
          p + "scores.bwd_dq",
          "matmul_bp",
          OpKind.BATCHED_MATMUL,
          BW,
          l,
          2.0 * B * H * T * T * hd,
          List.of(ds, L.k),
          List.of(dq));
      Tensor dk = act(p + "dk", B, H, T, hd);
      g.op(
          p + "scores.bwd_dk",
          "matmul_bp",
          OpKind.BATCHED_MATMUL,
          BW,
          l,
          2.0 * B * H * T * T * hd,
          List.of(ds, L.q),
          List.of(dk));
      Tensor dqkvb = act(p + "dqkvb", tokens, 3 * d);
      g.op(
          p + "split_heads.bwd",
          "concat",
          OpKind.LAYOUT,
          BW,
          l,
          0,
          List.of(dq, dk, dv),
          List.of(dqkvb));
      Tensor dbqkv = grad(L.bqkv);
      g.op(
          p + "qkv_bias.bwd",
          "reduce_sum",
          OpKind.REDUCTION,
          BW,
          l,
          tokens * 3.0 * d,
          List.of(dqkvb),
          List.of(dbqkv));
      Tensor dh1 = act(p + "dh1", tokens, d);
      g.op(
          p + "qkv.bwd_dx",
          linOp(sq) + "_bp",
          linKind(sq),
          BW,
          l,
          2.0 * tokens * d * 3 * d * sq.density(),
          List.of(dqkvb, L.wqkv),
          List.of(dh1),
          sq);
      Tensor dwqkv = grad(L.wqkv);
      g.op(
          p + "qkv.bwd_dw",
          linOp(sq) + "_bp",
          linKind(sq),
          BW,
          l,
          2.0 * tokens * d * 3 * d * sq.density(),
          List.of(L.h1, dqkvb),
          List.of(dwqkv),
          sq);
      Tensor dxa = act(p + "dxa", tokens, d);
      Tensor dg1 = grad(L.g1), dbe1 = grad(L.b1);
      g.op(
          p + "ln1.bwd",
          "layer_norm_bp",
          OpKind.NORM,
          BW,
          l,
          10.0 * tokens * d,
          List.of(dh1, L.x, L.g1),
          List.of(dxa, dg1, dbe1));
      Tensor dxIn = act(p + "dx", tokens, d);
      g.op(
          p + "resid1.bwd",
          "add",
          OpKind.ELEMENTWISE,
          BW,
          l,
          tokens * d,
          List.of(dxa, dx1),
          List.of(dxIn));
      dx = dxIn;
    }
    Tensor dwpe = grad(wpe);
    g.op(
        "pos_add.bwd",
        "reduce_sum",
        OpKind.REDUCTION,
        BW,
        -1,
        tokens * d,
        List.of(dx),
        List.of(dwpe));
    Tensor dwteEmb = g.tensor("dwte_emb", wte.shape(), ACT, TensorKind.WEIGHT_GRAD);
    g.op(
        "embed.bwd",
        "scatter_add",
        OpKind.GATHER,
        BW,
        -1,
        tokens * d,
        List.of(dx, ids),
        List.of(dwteEmb));
    Tensor dwte = grad(wte);
    g.op(
        "wte_grad_sum.bwd",
        "add",
        OpKind.ELEMENTWISE,
        BW,
        -1,
        (double) V * d,
        List.of(dwteHead, dwteEmb),
        List.of(dwte));

    // ---- optimizer: Adam with fp32 master weights, one update per parameter tensor ----
    for (int i = 0; i < params.size(); i++) {
      Tensor w = params.get(i);
      Tensor dw = findGrad(w);
      Tensor master =
          g.tensor(
              w.name() + ".master", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      Tensor m =
          g.tensor(w.name() + ".m", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      Tensor v =
          g.tensor(w.name() + ".v", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      Tensor wNew = g.tensor(w.name() + "'", w.shape(), ACT, TensorKind.WEIGHT, w.sparsity());
      Tensor masterNew =
          g.tensor(
              w.name() + ".master'", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      Tensor mNew =
          g.tensor(w.name() + ".m'", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      Tensor vNew =
          g.tensor(w.name() + ".v'", w.shape(), STATE, TensorKind.OPTIMIZER_STATE, w.sparsity());
      double kept = w.elements() * w.sparsity().density();
      g.op(
          "adam." + w.name(),
          "adam_updater",
          OpKind.OPTIMIZER,
          Phase.OPTIMIZER,
          layerOf(w.name()),
          12.0 * kept,
          List.of(dw, master, m, v),
          List.of(wNew, masterNew, mNew, vNew),
          w.sparsity());
    }
    return g.build();
  }

  private LayerFwd layerWeights(int l) {
    LayerFwd L = new LayerFwd();
    String p = "L" + l + ".";
    SparsityInfo sq = sp(s.isSparseQkv()),
        so = sp(s.isSparseProj()),
        s1 = sp(s.isSparseFc1()),
        s2 = sp(s.isSparseFc2());
    long ffn = s.getFfn();
    L.g1 = weight(p + "ln1.g", SparsityInfo.DENSE, d);
    L.b1 = weight(p + "ln1.b", SparsityInfo.DENSE, d);
    L.wqkv = weight(p + "Wqkv", sq, d, 3 * d);
    L.bqkv = weight(p + "bqkv", SparsityInfo.DENSE, 3 * d);
    L.wo = weight(p + "Wo", so, d, d);
    L.bo = weight(p + "bo", SparsityInfo.DENSE, d);
    L.g2 = weight(p + "ln2.g", SparsityInfo.DENSE, d);
    L.b2 = weight(p + "ln2.b", SparsityInfo.DENSE, d);
    L.w1 = weight(p + "W1", s1, d, ffn);
    L.bb1 = weight(p + "b1", SparsityInfo.DENSE, ffn);
    L.w2 = weight(p + "W2", s2, ffn, d);
    L.bb2 = weight(p + "b2", SparsityInfo.DENSE, d);
    return L;
  }

  /**
   * Forward of one decoder layer into L's activation fields (tag "fwd", or "recompute" inside
   * backward).
   */
  private void layerForward(LayerFwd L, int l, Tensor x, Phase F, String tag) {
    long T = s.getSeq(), B = s.getBatch(), H = s.getHeads(), ffn = s.getFfn();
    String p = "L" + l + ".";
    String a = tag.equals("fwd") ? "" : "." + tag;
    SparsityInfo sq = L.wqkv.sparsity(),
        so = L.wo.sparsity(),
        s1 = L.w1.sparsity(),
        s2 = L.w2.sparsity();
    L.x = x;
    L.h1 = act(p + "h1" + a, tokens, d);
    g.op(
        p + "ln1." + tag,
        "layer_norm",
        OpKind.NORM,
        F,
        l,
        8.0 * tokens * d,
        List.of(x, L.g1, L.b1),
        List.of(L.h1));
    L.qkv = act(p + "qkv" + a, tokens, 3 * d);
    g.op(
        p + "qkv." + tag,
        linOp(sq),
        linKind(sq),
        F,
        l,
        2.0 * tokens * d * 3 * d * sq.density(),
        List.of(L.h1, L.wqkv),
        List.of(L.qkv),
        sq);
    L.qkvb = act(p + "qkvb" + a, tokens, 3 * d);
    g.op(
        p + "qkv_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * 3.0 * d,
        List.of(L.qkv, L.bqkv),
        List.of(L.qkvb));
    L.q = act(p + "q" + a, B, H, T, hd);
    L.k = act(p + "k" + a, B, H, T, hd);
    L.v = act(p + "v" + a, B, H, T, hd);
    g.op(
        p + "split_heads." + tag,
        "permute",
        OpKind.LAYOUT,
        F,
        l,
        0,
        List.of(L.qkvb),
        List.of(L.q, L.k, L.v));
    L.p = attentionForward(p, l, F, L.q, L.k, tag);
    Tensor ctx = act(p + "ctx" + a, B, H, T, hd);
    g.op(
        p + "context." + tag,
        "matmul",
        OpKind.BATCHED_MATMUL,
        F,
        l,
        2.0 * B * H * T * T * hd,
        List.of(L.p, L.v),
        List.of(ctx));
    L.ctxm = act(p + "ctxm" + a, tokens, d);
    g.op(
        p + "merge_heads." + tag, "permute", OpKind.LAYOUT, F, l, 0, List.of(ctx), List.of(L.ctxm));
    Tensor o = act(p + "o" + a, tokens, d);
    g.op(
        p + "proj." + tag,
        linOp(so),
        linKind(so),
        F,
        l,
        2.0 * tokens * d * d * so.density(),
        List.of(L.ctxm, L.wo),
        List.of(o),
        so);
    L.ob = act(p + "ob" + a, tokens, d);
    g.op(
        p + "proj_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(o, L.bo),
        List.of(L.ob));
    L.x1 = act(p + "x1" + a, tokens, d);
    g.op(
        p + "resid1." + tag,
        "add",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(x, L.ob),
        List.of(L.x1));
    L.h2 = act(p + "h2" + a, tokens, d);
    g.op(
        p + "ln2." + tag,
        "layer_norm",
        OpKind.NORM,
        F,
        l,
        8.0 * tokens * d,
        List.of(L.x1, L.g2, L.b2),
        List.of(L.h2));
    L.f = act(p + "f" + a, tokens, ffn);
    g.op(
        p + "fc1." + tag,
        linOp(s1),
        linKind(s1),
        F,
        l,
        2.0 * tokens * d * ffn * s1.density(),
        List.of(L.h2, L.w1),
        List.of(L.f),
        s1);
    L.fb = act(p + "fb" + a, tokens, ffn);
    g.op(
        p + "fc1_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        (double) tokens * ffn,
        List.of(L.f, L.bb1),
        List.of(L.fb));
    L.gl = act(p + "gelu" + a, tokens, ffn);
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
    Tensor f2 = act(p + "f2" + a, tokens, d);
    g.op(
        p + "fc2." + tag,
        linOp(s2),
        linKind(s2),
        F,
        l,
        2.0 * tokens * ffn * d * s2.density(),
        List.of(L.gl, L.w2),
        List.of(f2),
        s2);
    Tensor f2b = act(p + "f2b" + a, tokens, d);
    g.op(
        p + "fc2_bias." + tag,
        "biasadd",
        OpKind.ELEMENTWISE,
        F,
        l,
        tokens * d,
        List.of(f2, L.bb2),
        List.of(f2b));
    L.x2 = act(p + "x2" + a, tokens, d);
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
  private Tensor attentionForward(String p, int l, Phase ph, Tensor q, Tensor k, String tag) {
    long B = s.getBatch(), H = s.getHeads(), T = s.getSeq();
    Tensor sc = act(p + "scores." + tag, B, H, T, T);
    g.op(
        p + "scores." + tag,
        "matmul",
        OpKind.BATCHED_MATMUL,
        ph,
        l,
        2.0 * B * H * T * T * hd,
        List.of(q, k),
        List.of(sc));
    Tensor sm = act(p + "scores_masked." + tag, B, H, T, T);
    g.op(
        p + "scale_mask." + tag,
        "mul",
        OpKind.ELEMENTWISE,
        ph,
        l,
        2.0 * B * H * T * T,
        List.of(sc),
        List.of(sm));
    Tensor pr = act(p + "probs." + tag, B, H, T, T);
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

  private Tensor findGrad(Tensor w) {
    String want = "d" + w.name();
    for (Tensor t : grads) {
      if (t.name().equals(want)) {
        return t;
      }
    }
    throw new IllegalStateException("no gradient for " + w.name());
  }

  private static int layerOf(String name) {
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
