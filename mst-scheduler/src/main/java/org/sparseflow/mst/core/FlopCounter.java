package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Training FLOPs per step of a transformer-like model at its current densities. Formulas (one
 * multiply-add = 2 FLOPs; see mst-scheduler/README.md):
 *
 * <pre>
 *   linear l [in→out], tokens N, density d:   F_l = 2·N·in·out
 *     forward  F_l·d;  backward dX F_l·d;  backward dW F_l·d, or F_l (dense) on a topology-update
 * step
 *   attention layer, batch B, heads H, head dim D, context T, pattern density a (vs causal):
 *     P = a·B·H·T(T+1)/2 computed score elements;  forward 4·P·D (QKᵀ and PV) + 5·P (softmax);
 *     backward 8·P·D + 5·P
 *   dense extras per step (embeddings, norms, residuals, activations, loss): {@link
 * #extraDensePerStep}
 * </pre>
 *
 * The dense reference uses d = 1 and a = 1 (an ideal causal kernel, so sparse attention is not
 * flattered by counting masked-out upper triangles).
 */
public final class FlopCounter {

  /** A sparse-able (or always dense) linear map applied to every token. */
  public static final class Linear {
    public final String name;
    public final long in;
    public final long out;

    public Linear(String name, long in, long out) {
      this.name = name;
      this.in = in;
      this.out = out;
    }
  }

  private final long tokensPerStep;
  private final List<Linear> linears;
  private final int attentionLayers;
  private final long batch;
  private final int heads;
  private final int headDim;
  private final int seqLen;
  private final double extraDensePerStep;

  public FlopCounter(
      long tokensPerStep,
      List<Linear> linears,
      int attentionLayers,
      long batch,
      int heads,
      int headDim,
      int seqLen,
      double extraDensePerStep) {
    this.tokensPerStep = Args.positive("tokensPerStep", tokensPerStep);
    this.linears = Collections.unmodifiableList(new ArrayList<>(linears));
    this.attentionLayers = attentionLayers;
    this.batch = batch;
    this.heads = heads;
    this.headDim = headDim;
    this.seqLen = seqLen;
    this.extraDensePerStep = extraDensePerStep;
  }

  /**
   * A GPT (pre-LN, GELU MLP 4×) with sparse-able linears named {@code <layer>_qkv, _proj, _fc1,
   * _fc2} and a dense LM head {@code head} [d, vocab] (listed so it can be made sparse too).
   * Extras: token+position embedding gather (backward scatter-add N·d), LayerNorm 2 per layer +
   * final (forward 8·N·d, backward 16·N·d each), 2 residual adds per layer (N·d forward, 0
   * backward), GELU on 4d (forward 8·N·4d, backward 12·N·4d), softmax cross-entropy (forward 5·N·V,
   * backward 2·N·V). Rough per-element constants; they are small.
   */
  public static FlopCounter forGpt(
      int layers, int dModel, int heads, int seqLen, int vocab, int batch) {
    long n = (long) batch * seqLen;
    List<Linear> ls = new ArrayList<>();
    for (int i = 0; i < layers; i++) {
      ls.add(new Linear(i + "_qkv", dModel, 3L * dModel));
      ls.add(new Linear(i + "_proj", dModel, dModel));
      ls.add(new Linear(i + "_fc1", dModel, 4L * dModel));
      ls.add(new Linear(i + "_fc2", 4L * dModel, dModel));
    }
    ls.add(new Linear("head", dModel, vocab));
    return new FlopCounter(
        n,
        ls,
        layers,
        batch,
        heads,
        dModel / heads,
        seqLen,
        gptExtraDenseFlops(layers, dModel, seqLen, vocab, batch));
  }

  /**
   * The dense extras of {@link #forGpt}: embedding scatter-add, norms, residuals, GELU, loss (per
   * step).
   */
  public static double gptExtraDenseFlops(
      int layers, int dModel, int seqLen, int vocab, int batch) {
    double n = (double) batch * seqLen;
    double d = dModel;
    return n * d // embedding backward scatter-add (+ pos add)
        + (2.0 * layers + 1) * 24 * n * d // layer norms fwd + bwd
        + 2.0 * layers * n * d // residual adds
        + layers * 20.0 * n * 4 * d // GELU fwd + bwd
        + 7.0 * n * vocab; // softmax cross-entropy fwd + bwd
  }

  public List<Linear> linears() {
    return linears;
  }

  /**
   * FLOPs of one training step.
   *
   * @param density linear name -> density (missing = dense)
   * @param attnDensity per attention layer pattern density vs causal (null or missing = 1)
   * @param denseWeightGradFor names whose dW is computed densely this step (topology updates), may
   *     be empty
   */
  public double stepFlops(
      Map<String, Double> density, double[] attnDensity, Set<String> denseWeightGradFor) {
    double total = extraDensePerStep;
    for (Linear l : linears) {
      double f = 2.0 * tokensPerStep * l.in * l.out;
      double d = density.getOrDefault(l.name, 1.0);
      total += f * d * 2 + f * (denseWeightGradFor.contains(l.name) ? 1.0 : d);
    }
    double causal = (double) seqLen * (seqLen + 1) / 2;
    for (int i = 0; i < attentionLayers; i++) {
      double a = attnDensity == null || i >= attnDensity.length ? 1.0 : attnDensity[i];
      double p = a * batch * heads * causal;
      total += 12.0 * p * headDim + 10.0 * p;
    }
    return total;
  }

  /** FLOPs of one dense training step (the reference). */
  public double denseStepFlops() {
    return stepFlops(Map.of(), null, Set.of());
  }
}
