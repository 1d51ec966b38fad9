package org.sparseflow.examples.data;

import java.util.SplittableRandom;

/**
 * Samples training windows of {@code contextLength + 1} tokens at random offsets. The offsets of
 * batch {@code step} depend only on {@code (seed, step)}, not on earlier calls, so a run resumed at
 * step k draws exactly the batches an uninterrupted run would have drawn: the sampler has no state
 * to checkpoint.
 */
public final class BatchSampler {

  private final int[] tokens;
  private final int batchSize;
  private final int contextLength;
  private final long seed;

  public BatchSampler(int[] tokens, int batchSize, int contextLength, long seed) {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize: " + batchSize + " must be >= 1");
    }
    if (contextLength < 1) {
      throw new IllegalArgumentException("contextLength: " + contextLength + " must be >= 1");
    }
    if (tokens.length < contextLength + 1) {
      throw new IllegalArgumentException(
          "tokens: "
              + tokens.length
              + " tokens is fewer than one window of contextLength + 1 = "
              + (contextLength + 1));
    }
    this.tokens = tokens;
    this.batchSize = batchSize;
    this.contextLength = contextLength;
    this.seed = seed;
  }

  /** Windows of batch number {@code step}: int[batchSize][contextLength + 1]. */
  public int[][] windows(long step) {
    // golden-ratio mixing so neighbouring steps get unrelated streams
    SplittableRandom rnd = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + step);
    int maxStart = tokens.length - (contextLength + 1);
    int[][] out = new int[batchSize][];
    for (int b = 0; b < batchSize; b++) {
      int start = maxStart == 0 ? 0 : rnd.nextInt(maxStart + 1);
      out[b] = new int[contextLength + 1];
      System.arraycopy(tokens, start, out[b], 0, contextLength + 1);
    }
    return out;
  }

  /**
   * Fixed evaluation windows: {@code count} windows evenly spaced over the whole stream
   * (deterministic, the same for every run on the same data and context length), returned in
   * batches of {@code batchSize}.
   */
  public static int[][][] evaluationBatches(
      int[] tokens, int contextLength, int batchSize, int count) {
    if (count < 1) {
      throw new IllegalArgumentException("count: " + count + " must be >= 1");
    }
    int span = contextLength + 1;
    if (tokens.length < span) {
      throw new IllegalArgumentException(
          "tokens: " + tokens.length + " tokens is fewer than one window of " + span);
    }
    int maxStart = tokens.length - span;
    int nBatches = (count + batchSize - 1) / batchSize;
    int[][][] out = new int[nBatches][][];
    int w = 0;
    for (int b = 0; b < nBatches; b++) {
      int size = Math.min(batchSize, count - w);
      out[b] = new int[size][span];
      for (int i = 0; i < size; i++, w++) {
        int start = count == 1 ? 0 : (int) ((long) maxStart * w / (count - 1));
        System.arraycopy(tokens, start, out[b][i], 0, span);
      }
    }
    return out;
  }

  public int batchSize() {
    return batchSize;
  }

  public int contextLength() {
    return contextLength;
  }

  public long seed() {
    return seed;
  }
}
