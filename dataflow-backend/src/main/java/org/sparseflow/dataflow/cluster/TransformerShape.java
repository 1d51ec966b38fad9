package org.sparseflow.dataflow.cluster;

import org.sparseflow.dataflow.capture.GptSpec;

/**
 * Dimensions of a GPT decoder stack as the parallel model needs them.
 *
 * @param name label
 * @param layers decoder layers
 * @param hidden model width h
 * @param heads attention heads a
 * @param ffn MLP width (4h in GPT)
 * @param vocab vocabulary V
 * @param seq sequence length s
 */
public record TransformerShape(
    String name, int layers, int hidden, int heads, int ffn, int vocab, int seq) {

  public TransformerShape {
    if (layers < 1 || hidden < 1 || heads < 1 || ffn < 1 || vocab < 1 || seq < 1) {
      throw new IllegalArgumentException(
          "model '" + name + "': layers, hidden, heads, ffn, vocab and seq must all be >= 1");
    }
    if (hidden % heads != 0) {
      throw new IllegalArgumentException(
          "model '" + name + "': hidden " + hidden + " is not divisible by heads " + heads);
    }
  }

  public static TransformerShape of(GptSpec s) {
    return new TransformerShape(
        s.getName(),
        s.getLayers(),
        s.getDModel(),
        s.getHeads(),
        s.getFfn(),
        s.getVocab(),
        s.getSeq());
  }

  public int headDim() {
    return hidden / heads;
  }

  /** Weights of one decoder layer (QKV, projection, two MLP matrices; biases and norms ignored). */
  public double layerParams() {
    return 4.0 * hidden * hidden + 2.0 * hidden * ffn;
  }

  public double totalParams() {
    return layers * layerParams() + (double) vocab * hidden;
  }

  /**
   * FLOPs per iteration as Megatron-LM counts them (Narayanan et al., SC21, eq. 3, full activation
   * recompute, FFN = 4h): {@code 96 B s l h^2 (1 + s/(6h) + V/(16 l h))}.
   */
  public double megatronFlops(long globalBatch) {
    double h = hidden;
    return 96.0
        * globalBatch
        * seq
        * layers
        * h
        * h
        * (1 + seq / (6 * h) + vocab / (16.0 * layers * h));
  }

  /**
   * Model FLOPs per iteration without recompute (forward + backward = 3 passes): 72 B s l h^2 (1 +
   * s/(6h) + V/(12 l h)) (Narayanan et al., SC21, eq. 2 with 3 instead of 4 passes).
   */
  public double modelFlops(long globalBatch) {
    double h = hidden;
    return 72.0
        * globalBatch
        * seq
        * layers
        * h
        * h
        * (1 + seq / (6 * h) + vocab / (12.0 * layers * h));
  }
}
