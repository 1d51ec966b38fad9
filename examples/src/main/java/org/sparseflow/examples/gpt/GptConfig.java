package org.sparseflow.examples.gpt;

/**
 * Size of a small reference GPT.
 *
 * @param vocab vocabulary size (characters for the bundled corpus)
 * @param layers number of decoder blocks
 * @param dModel embedding width C (divisible by heads)
 * @param heads attention heads H (head size C / H)
 * @param context context length T (fixed: the causal bias and position table are built for T)
 * @param seed weight-init seed
 * @param tiedHead LM head shares the token embedding (logits = h wte^T) instead of its own [C, V]
 *     weight
 */
public record GptConfig(
    int vocab, int layers, int dModel, int heads, int context, long seed, boolean tiedHead) {

  public GptConfig {
    check("vocab", vocab, 2);
    check("layers", layers, 1);
    check("dModel", dModel, 1);
    check("heads", heads, 1);
    check("context", context, 1);
    if (dModel % heads != 0) {
      throw new IllegalArgumentException(
          "dModel = "
              + dModel
              + " is not divisible by heads = "
              + heads
              + "; allowed: dModel a multiple of heads");
    }
  }

  /** Untied LM head. */
  public GptConfig(int vocab, int layers, int dModel, int heads, int context, long seed) {
    this(vocab, layers, dModel, heads, context, seed, false);
  }

  public int headSize() {
    return dModel / heads;
  }

  public GptConfig withTiedHead(boolean tied) {
    return new GptConfig(vocab, layers, dModel, heads, context, seed, tied);
  }

  private static void check(String name, int v, int min) {
    if (v < min) {
      throw new IllegalArgumentException(
          name + " = " + v + " is not allowed; allowed: an integer >= " + min);
    }
  }
}
