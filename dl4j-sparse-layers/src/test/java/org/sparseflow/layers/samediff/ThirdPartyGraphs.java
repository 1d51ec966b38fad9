package org.sparseflow.layers.samediff;

import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;

/**
 * Small SameDiff models written the way third-party code writes them, none using SparseFlow or the
 * project's reference GPT: PyTorch-style x·Wᵀ linears, rank-3 tensordot projections, a tied
 * embedding, and a causal transformer block whose attention mask is a placeholder.
 */
final class ThirdPartyGraphs {
  private ThirdPartyGraphs() {}

  static SDVariable weight(SameDiff sd, String name, long rows, long cols, double scale) {
    return sd.var(name, Nd4j.randn(DataType.DOUBLE, rows, cols).muli(scale));
  }

  /** MLP with weights stored [out, in] and applied as mmul(x, W, transposeB). */
  static SameDiff torchStyleMlp() {
    Nd4j.getRandom().setSeed(21);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("in", DataType.DOUBLE, -1, 16);
    SDVariable label = sd.placeHolder("label", DataType.DOUBLE, -1, 4);
    SDVariable h = x;
    String[] names = {"l0", "l1", "l2"};
    long[] dims = {16, 32, 32, 4};
    for (int i = 0; i < 3; i++) {
      SDVariable w = weight(sd, names[i] + "_weight", dims[i + 1], dims[i], 0.3);
      SDVariable b = sd.var(names[i] + "_bias", Nd4j.zeros(DataType.DOUBLE, 1, dims[i + 1]));
      h = sd.mmul(names[i] + "_mm", h, w, false, true, false).add(b);
      if (i < 2) {
        h = sd.nn.tanh(h);
      }
    }
    sd.loss().meanSquaredError("loss", label, h.rename("out"), null);
    training(sd);
    return sd;
  }

  /**
   * Token model [B, T] -> one-hot-free lookup: embedding E [V, d] read by gather, two rank-3
   * tensordot layers on [B, T, d], and logits h·Eᵀ (E tied as the output projection).
   */
  static SameDiff tiedEmbeddingModel(int vocab, int d) {
    Nd4j.getRandom().setSeed(22);
    SameDiff sd = SameDiff.create();
    SDVariable ids = sd.placeHolder("ids", DataType.INT32, -1);
    SDVariable e = weight(sd, "tok_emb", vocab, d, 0.5);
    SDVariable h = sd.gather("emb", e, ids, 0); // [N, d]
    SDVariable h3 = sd.reshape("h3", h, 1, -1, d); // [1, N, d]
    SDVariable w1 = weight(sd, "ff_in", d, 2L * d, 0.3);
    SDVariable w2 = weight(sd, "ff_out", 2L * d, d, 0.3);
    SDVariable a = sd.nn.tanh(sd.tensorMmul("ff1", h3, w1, new int[] {2}, new int[] {0}));
    SDVariable f = sd.tensorMmul("ff2", a, w2, new int[] {2}, new int[] {0});
    SDVariable h2 = sd.reshape("h2", f.add(h3), -1, d);
    sd.mmul("logits", h2, e, false, true, false);
    return sd;
  }

  private static void training(SameDiff sd) {
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
  }

  /**
   * One causal transformer block on [B, T, d] written in PyTorch style: projections x·Wᵀ on the
   * flattened [B*T, d] activations, heads split by reshape [B, T, H, D] and permute, scores
   * matmul(q, permute(k)) scaled by 1/sqrt(D) after (or, with {@code scaleFirst}, q scaled before),
   * and a mask that is either the placeholder "mask" [T, T] (1 = keep) applied as {@code (mask - 1)
   * * 1e10}, or a constant causal bias.
   */
  static SameDiff attentionBlock(
      int t, int heads, int dh, boolean runtimeMask, boolean scaleFirst) {
    return attentionBlock(t, heads, dh, runtimeMask, scaleFirst, false);
  }

  /** As above; with {@code bias} the projections are x·Wᵀ + b (GPT-2 style). */
  static SameDiff attentionBlock(
      int t, int heads, int dh, boolean runtimeMask, boolean scaleFirst, boolean bias) {
    Nd4j.getRandom().setSeed(23);
    int d = heads * dh;
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, -1, t, d);
    SDVariable x2 = sd.reshape("x2", x, -1, d);
    SDVariable[] qkv = new SDVariable[3];
    String[] n = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
      SDVariable w = weight(sd, "attn_" + n[i] + "_weight", d, d, 0.4);
      SDVariable p = sd.mmul(n[i] + "_proj", x2, w, false, true, false);
      if (bias) {
        p = p.add(sd.var("attn_" + n[i] + "_bias", Nd4j.zeros(DataType.DOUBLE, d)));
      }
      qkv[i] = sd.permute(n[i] + "_heads", sd.reshape(p, -1, t, heads, dh), 0, 2, 1, 3);
    }
    double s = 1.0 / Math.sqrt(dh);
    SDVariable q = scaleFirst ? qkv[0].mul("q_scaled", s) : qkv[0];
    SDVariable scores = sd.mmul("scores", q, sd.permute("k_t", qkv[1], 0, 1, 3, 2));
    SDVariable scaled = scaleFirst ? scores : scores.mul("scores_scaled", s);
    SDVariable masked;
    if (runtimeMask) {
      SDVariable mask = sd.placeHolder("mask", DataType.DOUBLE, t, t);
      masked = scaled.add("masked", mask.sub(1.0).mul(1e10));
    } else {
      INDArray causal = Nd4j.zeros(DataType.DOUBLE, t, t);
      for (int i = 0; i < t; i++) {
        for (int j = i + 1; j < t; j++) {
          causal.putScalar(i, j, -1e9);
        }
      }
      masked = scaled.add("masked", sd.constant("causal_bias", causal));
    }
    SDVariable probs = sd.nn.softmax("probs", masked, -1);
    SDVariable att = sd.mmul("att", probs, qkv[2]);
    SDVariable merged = sd.reshape("merged", sd.permute(att, 0, 2, 1, 3), -1, d);
    SDVariable wo = weight(sd, "attn_out_weight", d, d, 0.4);
    SDVariable y = sd.mmul("y", merged, wo, false, true, false);
    sd.loss().meanSquaredError("loss", sd.placeHolder("target", DataType.DOUBLE, -1, d), y, null);
    return sd;
  }

  /** Lower-triangular 0/1 keep mask [T, T]. */
  static INDArray causalKeep(int t) {
    INDArray m = Nd4j.zeros(DataType.DOUBLE, t, t);
    for (int i = 0; i < t; i++) {
      for (int j = 0; j <= i; j++) {
        m.putScalar(i, j, 1.0);
      }
    }
    return m;
  }
}
