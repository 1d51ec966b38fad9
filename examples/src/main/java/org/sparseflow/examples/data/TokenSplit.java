package org.sparseflow.examples.data;

import java.util.Arrays;

/**
 * Train/validation(/test) split of a token stream: the first {@code trainFraction} of the tokens
 * train, the last {@code testFraction} (0 = none) are a test part that nothing tunes on, and the
 * rest between them validate. Each part is contiguous, so no evaluation window overlaps a training
 * one. Every non-empty part must hold at least one full window of {@code contextLength + 1} tokens
 * (inputs plus the shifted targets).
 */
public final class TokenSplit {

  public static final double DEFAULT_TRAIN_FRACTION = 0.9;

  private final int[] train;
  private final int[] validation;
  private final int[] test;

  private TokenSplit(int[] train, int[] validation, int[] test) {
    this.train = train;
    this.validation = validation;
    this.test = test;
  }

  /** Train and validation only (no test part). */
  public static TokenSplit of(int[] tokens, double trainFraction, int contextLength) {
    return of(tokens, trainFraction, 0.0, contextLength);
  }

  /**
   * Train, validation and test parts; {@code testFraction} in [0, 1 - trainFraction) is taken from
   * the end of the held-out tail.
   */
  public static TokenSplit of(
      int[] tokens, double trainFraction, double testFraction, int contextLength) {
    if (!(testFraction >= 0 && testFraction < 1 - trainFraction)) {
      throw new IllegalArgumentException(
          "testFraction: "
              + testFraction
              + " is outside [0, "
              + (1 - trainFraction)
              + ") (what the "
              + trainFraction
              + " train fraction leaves)");
    }
    if (!(trainFraction > 0 && trainFraction < 1)) {
      throw new IllegalArgumentException("trainFraction: " + trainFraction + " is outside (0, 1)");
    }
    if (contextLength < 1) {
      throw new IllegalArgumentException("contextLength: " + contextLength + " must be >= 1");
    }
    int cut = (int) Math.floor(tokens.length * trainFraction);
    int testCut = tokens.length - (int) Math.floor(tokens.length * testFraction);
    int need = contextLength + 1;
    if (cut < need || testCut - cut < need || testFraction > 0 && tokens.length - testCut < need) {
      double validationFraction = 1 - trainFraction - testFraction;
      double smallest = Math.min(trainFraction, validationFraction);
      if (testFraction > 0) {
        smallest = Math.min(smallest, testFraction);
      }
      long minimum = (long) Math.ceil(need / smallest) + 1;
      String split =
          Math.round(trainFraction * 100)
              + "/"
              + Math.round(validationFraction * 100)
              + (testFraction > 0
                  ? "/" + Math.round(testFraction * 100) + " train/validation/test"
                  : " train/validation");
      throw new IllegalArgumentException(
          "corpus: "
              + tokens.length
              + " characters is too small for context length "
              + contextLength
              + "; the "
              + split
              + " split needs at least "
              + minimum
              + " characters");
    }
    return new TokenSplit(
        Arrays.copyOfRange(tokens, 0, cut),
        Arrays.copyOfRange(tokens, cut, testCut),
        Arrays.copyOfRange(tokens, testCut, tokens.length));
  }

  public int[] train() {
    return train;
  }

  public int[] validation() {
    return validation;
  }

  /** The test part; empty when the split has none. */
  public int[] test() {
    return test;
  }
}
