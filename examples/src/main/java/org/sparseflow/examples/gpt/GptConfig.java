package org.sparseflow.examples.gpt;

import java.util.List;

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

  /** The names of the reference sizes {@link #named} knows. */
  public static final List<String> NAMES = List.of("gpt-tiny", "gpt-mini", "gpt-small");

  /** gpt-mini, the reference model of the benchmarks: 4 layers, d_model 128, 4 heads. */
  public static GptConfig gptMini(int vocab, int context, long seed) {
    return new GptConfig(vocab, 4, 128, 4, context, seed);
  }

  /**
   * The reference size with this name: gpt-tiny (2 layers, d_model 32, 2 heads), gpt-mini (4, 128,
   * 4) or gpt-small (6, 256, 8).
   *
   * @throws IllegalArgumentException naming the value and the allowed names
   */
  public static GptConfig named(String name, int vocab, int context, long seed) {
    return switch (name == null ? "" : name) {
      case "gpt-tiny" -> new GptConfig(vocab, 2, 32, 2, context, seed);
      case "gpt-mini" -> gptMini(vocab, context, seed);
      case "gpt-small" -> new GptConfig(vocab, 6, 256, 8, context, seed);
      default ->
          throw new IllegalArgumentException(
              "model = '"
                  + name
                  + "' is not a reference GPT; allowed: "
                  + String.join(", ", NAMES));
    };
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
