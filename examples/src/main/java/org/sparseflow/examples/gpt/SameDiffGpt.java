package org.sparseflow.examples.gpt;

import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.weightinit.impl.OneInitScheme;
import org.nd4j.weightinit.impl.ZeroInitScheme;

/**
 * Reference GPT written with plain SameDiff, the way a DL4J user would write it in 1.0.0-M2.1 (no
 * SparseFlow classes): token + position embedding, N pre-LN decoder blocks (causal multi-head
 * attention with a hand-built causal bias, GELU MLP), final layer norm, tied or untied LM head,
 * softmax cross-entropy.
 *
 * <p>Placeholders: {@value #INPUT} [B, T] token ids (float), {@value #LABEL} [B, T] next-token ids
 * (float). Outputs: {@value #LOGITS} [B*T, V] and the scalar loss {@value #LOSS}. Weights are [in,
 * out] (y = x W): {@code wte [V,C], wpe [T,C], h<i>_attn_wq/wk/wv/wo [C,C], h<i>_mlp_fc [C,4C],
 * h<i>_mlp_proj [4C,C], lm_head [C,V]}; layer norms {@code h<i>_ln1_gain/bias, h<i>_ln2_gain/bias,
 * ln_f_gain/bias}.
 *
 * <p>M2.1 notes: the token embedding is a one-hot matmul because {@code sd.gather}'s gradient fails
 * in {@code fit()}; the causal bias is a [T, T] constant (0 on and below the diagonal, -1e9 above)
 * because no M2.1 attention op supports causal masking.
 */
public final class SameDiffGpt {
  public static final String INPUT = "input";
  public static final String LABEL = "label";
  public static final String LOGITS = "logits";
  public static final String LOSS = "loss";

  /** Per-token cross-entropy [B*T] that {@value #LOSS} averages. */
  public static final String TOKEN_LOSS = "token_loss";

  /**
   * Names of every block's attention projections and MLP weights (embeddings and head excluded).
   */
  public static final String BLOCK_WEIGHTS = "h\\d+_(attn_w[qkvo]|mlp_fc|mlp_proj)";

  private SameDiffGpt() {}

  /** Builds the graph with an Adam(lr) training config. */
  public static SameDiff build(GptConfig c, double learningRate) {
    return build(c, new Adam(learningRate));
  }

  public static SameDiff build(GptConfig c, IUpdater updater) {
    Nd4j.getRandom().setSeed(c.seed());
    SameDiff sd = SameDiff.create();
    int v = c.vocab(), t = c.context(), C = c.dModel(), h = c.heads(), d = c.headSize();
    DataType f = DataType.FLOAT;
    double std = 0.02, projStd = 0.02 / Math.sqrt(2.0 * c.layers()); // GPT-2 init

    SDVariable ids = sd.placeHolder(INPUT, f, -1, t);
    SDVariable labels = sd.placeHolder(LABEL, f, -1, t);

    SDVariable wte = sd.var("wte", Nd4j.randn(f, v, C).muli(std));
    SDVariable wpe = sd.var("wpe", Nd4j.randn(f, t, C).muli(std));
    INDArray lower = Nd4j.ones(f, t, t);
    for (int i = 0; i < t; i++) {
      for (int j = i + 1; j < t; j++) {
        lower.putScalar(i, j, 0.0);
      }
    }
    SDVariable causalBias = sd.constant("causal_bias", lower.sub(1.0).muli(1e9));

    SDVariable oneHot = sd.oneHot("tokens_onehot", ids.castTo(DataType.INT32), v).reshape(-1, v);
    SDVariable x = oneHot.mmul(wte).reshape(-1, t, C).add(wpe); // [B, T, C]

    for (int l = 0; l < c.layers(); l++) {
      String p = "h" + l + "_";
      // --- attention (pre-LN)
      SDVariable hIn = layerNorm(sd, x, p + "ln1", C).reshape(-1, C); // [B*T, C]
      SDVariable q =
          heads(
              hIn.mmul(linear(sd, p + "attn_wq", C, C, std)).add(bias(sd, p + "attn_bq", C)),
              t,
              h,
              d);
      SDVariable k =
          heads(
              hIn.mmul(linear(sd, p + "attn_wk", C, C, std)).add(bias(sd, p + "attn_bk", C)),
              t,
              h,
              d);
      SDVariable vv =
          heads(
              hIn.mmul(linear(sd, p + "attn_wv", C, C, std)).add(bias(sd, p + "attn_bv", C)),
              t,
              h,
              d);
      SDVariable scores = sd.mmul(q, k, false, true, false).mul(1.0 / Math.sqrt(d)).add(causalBias);
      SDVariable att = sd.nn().softmax(p + "attn_probs", scores, 3);
      SDVariable y = att.mmul(vv).permute(0, 2, 1, 3).reshape(-1, C); // [B*T, C]
      y = y.mmul(linear(sd, p + "attn_wo", C, C, projStd)).add(bias(sd, p + "attn_bo", C));
      x = x.add(y.reshape(-1, t, C));
      // --- MLP (pre-LN)
      SDVariable m = layerNorm(sd, x, p + "ln2", C).reshape(-1, C);
      m =
          sd.nn()
              .gelu(
                  m.mmul(linear(sd, p + "mlp_fc", C, 4 * C, std))
                      .add(bias(sd, p + "mlp_bfc", 4 * C)));
      m = m.mmul(linear(sd, p + "mlp_proj", 4 * C, C, projStd)).add(bias(sd, p + "mlp_bproj", C));
      x = x.add(m.reshape(-1, t, C));
    }
    SDVariable hf = layerNorm(sd, x, "ln_f", C).reshape(-1, C);
    SDVariable logits =
        c.tiedHead()
            ? sd.mmul(LOGITS, hf, wte, false, true, false)
            : hf.mmul(LOGITS, linear(sd, "lm_head", C, v, std));
    // sparseSoftmaxCrossEntropy has no reduction: it returns one loss per token. Average it so that
    // LOSS is
    // the scalar mean cross-entropy (nats per token) that users and benchmarks read.
    SDVariable tokenLoss =
        sd.loss()
            .sparseSoftmaxCrossEntropy(
                TOKEN_LOSS, logits, labels.reshape(-1).castTo(DataType.INT32));
    tokenLoss.mean(LOSS);
    sd.setLossVariables(LOSS);
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(updater)
            .dataSetFeatureMapping(INPUT)
            .dataSetLabelMapping(LABEL)
            .build());
    return sd;
  }

  /**
   * A training batch from windows int[batch][T + 1]: features = tokens 0..T-1, labels = tokens 1..T
   * (float ids).
   */
  public static DataSet batch(int[][] windows) {
    int b = windows.length, t = windows[0].length - 1;
    INDArray x = Nd4j.zeros(DataType.FLOAT, b, t), y = Nd4j.zeros(DataType.FLOAT, b, t);
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        x.putScalar(i, j, windows[i][j]);
        y.putScalar(i, j, windows[i][j + 1]);
      }
    }
    return new DataSet(x, y);
  }

  private static SDVariable linear(SameDiff sd, String name, int in, int out, double std) {
    return sd.var(name, Nd4j.randn(DataType.FLOAT, in, out).muli(std));
  }

  private static SDVariable bias(SameDiff sd, String name, int n) {
    return sd.var(name, new ZeroInitScheme('c'), DataType.FLOAT, n);
  }

  private static SDVariable layerNorm(SameDiff sd, SDVariable x, String name, int c) {
    SDVariable g = sd.var(name + "_gain", new OneInitScheme('c'), DataType.FLOAT, c);
    SDVariable b = sd.var(name + "_bias", new ZeroInitScheme('c'), DataType.FLOAT, c);
    return sd.nn().layerNorm(x, g, b, false, 2);
  }

  /** [B*T, C] -> [B, H, T, D]. */
  private static SDVariable heads(SDVariable x, int t, int h, int d) {
    return x.reshape(-1, t, h, d).permute(0, 2, 1, 3);
  }
}
