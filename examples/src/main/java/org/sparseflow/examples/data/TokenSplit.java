package org.sparseflow.examples.data;

import java.util.Arrays;

/**
 * Train/validation split of a token stream: the first {@code trainFraction} of the tokens train,
 * the rest validate (a contiguous tail, so no validation window overlaps a training one). Both
 * parts must hold at least one full window of {@code contextLength + 1} tokens (inputs plus the
 * shifted targets).
 */
public final class TokenSplit {

  public static final double DEFAULT_TRAIN_FRACTION = 0.9;

  private final int[] train;
  private final int[] validation;

  private TokenSplit(int[] train, int[] validation) {
    this.train = train;
    this.validation = validation;
  }

  public static TokenSplit of(int[] tokens, double trainFraction, int contextLength) {
    if (!(trainFraction > 0 && trainFraction < 1)) {
      throw new IllegalArgumentException("trainFraction: " + trainFraction + " is outside (0, 1)");
    }
    if (contextLength < 1) {
      throw new IllegalArgumentException("contextLength: " + contextLength + " must be >= 1");
    }
    int cut = (int) Math.floor(tokens.length * trainFraction);
    int need = contextLength + 1;
    if (cut < need || tokens.length - cut < need) {
      long minimum = (long) Math.ceil(need / Math.min(trainFraction, 1 - trainFraction)) + 1;
      throw new IllegalArgumentException(
          "corpus: "
              + tokens.length
              + " characters is too small for context length "
              + contextLength
              + "; the "
              + Math.round(trainFraction * 100)
              + "/"
              + Math.round((1 - trainFraction) * 100)
              + " train/validation split needs at least "
              + minimum
              + " characters");
    }
    return new TokenSplit(
        Arrays.copyOfRange(tokens, 0, cut), Arrays.copyOfRange(tokens, cut, tokens.length));
  }

  public int[] train() {
    return train;
  }

  public int[] validation() {
    return validation;
  }
}
