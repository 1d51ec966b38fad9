package org.sparseflow.train;

import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.train.optim.Optimizers;
import org.sparseflow.train.optim.WarmupDecaySchedule;

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
   * Fixes the MST topology-update interval (steps between prune/grow); null keeps the preset's rule
   * (the shipped presets scale ΔT to the run: steps / 20, see {@code MstConfig#withTotalSteps}).
   */
  public Integer mstDeltaT;

  /**
   * MST's target (final) density, in (0, 1]; null keeps the preset's. The preset's levels are
   * rescaled by one rule ({@code MstConfig#withTargetDensity}); only MST sparsity takes it.
   */
  public Double mstDensity;

  /**
   * Where MST's sparse weights live on the SameDiff model: {@code masked} (dense arrays and a mask;
   * any schedule) or {@code packed} (kept blocks only, so memory follows density; a dense warm-up
   * holds all blocks until the ultra-sparse phase, {@link #mstSparseStart} avoids that).
   */
  public String mstStorage = "masked";

  /**
   * MST starts at its ultra-sparse level instead of pruning down from a dense warm-up ({@code
   * MstConfig#withSparseStart}).
   */
  public boolean mstSparseStart;

  public long seed = 42;
  public int batchSize = 16;
  public int contextLength = 128;
  public double learningRate = 1e-3;
  public double weightDecay = 0.01;

  /** Share of the run over which the learning rate warms up linearly from 0; 0 = none. */
  public double lrWarmup = 0;

  /** Learning-rate decay after the warm-up: {@code none}, {@code cosine} or {@code linear}. */
  public String lrDecay = "none";

  /** Per-parameter L2 clip of the gradient before the updater; 0 = off. */
  public double gradClip = 0;

  /** Evaluate validation loss every this many steps (and at the end). */
  public int evalEvery = 100;

  /** Number of fixed validation windows per evaluation. */
  public int evalWindows = 64;

  /** Save a checkpoint every this many steps (and at the end or on interrupt). */
  public int checkpointEvery = 200;

  public double trainFraction = 0.9;

  /**
   * Share of the corpus, taken from the end of the held-out tail, kept as a test part: nothing
   * evaluates on it during training, and its loss is computed once at the end. 0 = none.
   */
  public double testFraction = 0;

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
    if (mstDensity != null && !(mstDensity > 0 && mstDensity <= 1)) {
      throw new IllegalArgumentException(
          "--density: " + mstDensity + " is not allowed; allowed: a density in (0, 1]");
    }
    if (!"masked".equals(mstStorage) && !"packed".equals(mstStorage)) {
      throw new IllegalArgumentException(
          "--storage: " + mstStorage + " is not allowed; allowed: masked, packed");
    }
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
    optimizers(); // warm-up, decay and clip
    if (!(weightDecay >= 0 && weightDecay < 1)) {
      throw new IllegalArgumentException("--weight-decay: " + weightDecay + " is outside [0, 1)");
    }
    if (!(trainFraction > 0 && trainFraction < 1)) {
      throw new IllegalArgumentException("trainFraction: " + trainFraction + " is outside (0, 1)");
    }
    if (!(testFraction >= 0 && testFraction <= 0.5 && testFraction < 1 - trainFraction)) {
      throw new IllegalArgumentException(
          "testFraction: " + testFraction + " is outside [0, min(0.5, 1 - trainFraction))");
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

  /** The optimizer these options describe (validates them). */
  public Optimizers optimizers() {
    return new Optimizers(
        learningRate,
        lrWarmup,
        WarmupDecaySchedule.Decay.parse("--lr-decay", lrDecay),
        gradClip,
        steps);
  }

  public TrainConfig copy() {
    return Json.convert(this, TrainConfig.class);
  }
}
