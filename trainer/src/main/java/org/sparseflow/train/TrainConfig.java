package org.sparseflow.train;

import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * Everything that determines a training run. Stored in {@code summary.json} and in every
 * checkpoint; a run directory's config alone re-runs the experiment ({@code sparseflow train
 * --config summary.json} or {@code --resume}). Public fields so Jackson round-trips it without
 * boilerplate.
 */
public final class TrainConfig {

  /** {@code gpt-mini}, {@code gpt-small}, or the path of a saved DL4J model zip. */
  public String model = "gpt-mini";

  /** Corpus file path, or {@code bundled:moby-dick}. */
  public String corpus = "bundled:moby-dick";

  /** Sparsity preset name or YAML/JSON file; {@code null} = dense. */
  public String sparsity;

  /**
   * The sparsity configuration document as resolved at start (preset or file contents), kept so the
   * summary can re-run the experiment even if the preset or file changes later.
   */
  public JsonNode sparsityDocument;

  public int steps = 2000;

  /**
   * Overrides the MST preset's topology-update interval (steps between prune/grow); null keeps the
   * preset's. {@code compare} sets it to steps/20 so a short run still gets about 20 topology
   * updates, as 2000 steps with the preset's 100 would.
   */
  public Integer mstDeltaT;

  public long seed = 42;
  public int batchSize = 16;
  public int contextLength = 128;
  public double learningRate = 1e-3;
  public double weightDecay = 0.01;

  /** Evaluate validation loss every this many steps (and at the end). */
  public int evalEvery = 100;

  /** Number of fixed validation windows per evaluation. */
  public int evalWindows = 64;

  /** Save a checkpoint every this many steps (and at the end or on interrupt). */
  public int checkpointEvery = 200;

  public double trainFraction = 0.9;

  /**
   * Rejects out-of-range values with a message naming the option, the value and what is allowed.
   */
  public TrainConfig validate() {
    positive("--steps", steps);
    positive("--batch-size", batchSize);
    positive("--context-length", contextLength);
    positive("--eval-every", evalEvery);
    positive("--eval-windows", evalWindows);
    positive("--checkpoint-every", checkpointEvery);
    if (mstDeltaT != null && mstDeltaT < 1) {
      throw new IllegalArgumentException("--mst-delta-t: " + mstDeltaT + " must be >= 1");
    }
    if (steps > 10_000_000) {
      throw new IllegalArgumentException(
          "--steps: " + steps + " is too large; allowed 1..10000000");
    }
    if (batchSize > 4096) {
      throw new IllegalArgumentException(
          "--batch-size: " + batchSize + " is too large; allowed 1..4096");
    }
    if (contextLength > 8192) {
      throw new IllegalArgumentException(
          "--context-length: " + contextLength + " is too large; allowed 1..8192");
    }
    if (evalEvery > 10_000_000) {
      throw new IllegalArgumentException(
          "--eval-every: " + evalEvery + " is too large; allowed 1..10000000");
    }
    if (checkpointEvery > 10_000_000) {
      throw new IllegalArgumentException(
          "--checkpoint-every: " + checkpointEvery + " is too large; allowed 1..10000000");
    }
    if (evalWindows > 100_000) {
      throw new IllegalArgumentException(
          "--eval-windows: " + evalWindows + " is too large; allowed 1..100000");
    }
    if (corpus == null || corpus.isBlank()) {
      throw new IllegalArgumentException(
          "--corpus: is empty; allowed: a UTF-8 text file or bundled:moby-dick");
    }
    if (!(learningRate > 0 && learningRate <= 1)) {
      throw new IllegalArgumentException("--lr: " + learningRate + " is outside (0, 1]");
    }
    if (!(weightDecay >= 0 && weightDecay < 1)) {
      throw new IllegalArgumentException("--weight-decay: " + weightDecay + " is outside [0, 1)");
    }
    if (!(trainFraction > 0 && trainFraction < 1)) {
      throw new IllegalArgumentException("trainFraction: " + trainFraction + " is outside (0, 1)");
    }
    if (model == null || model.isBlank()) {
      throw new IllegalArgumentException(
          "--model: is empty; allowed gpt-mini, gpt-small or a saved DL4J model .zip");
    }
    return this;
  }

  private static void positive(String name, long v) {
    if (v < 1) {
      throw new IllegalArgumentException(name + ": " + v + " must be >= 1");
    }
  }

  public TrainConfig copy() {
    return Json.convert(this, TrainConfig.class);
  }
}
