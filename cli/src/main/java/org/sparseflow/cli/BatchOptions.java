package org.sparseflow.cli;

import org.sparseflow.train.TrainConfig;
import picocli.CommandLine.Option;

/**
 * Batch shape and optimizer schedule (learning rate, warm-up, decay, clipping), shared by {@code
 * train} and {@code compare} as a picocli mixin, so a dense baseline and a sparse run always get
 * the same options.
 */
final class BatchOptions {

  @Option(
      names = "--batch-size",
      description = "Sequences per step, 1..4096 (default: ${DEFAULT-VALUE}).")
  int batchSize = 16;

  @Option(
      names = "--context-length",
      description = "Characters per sequence, 1..8192 (default: ${DEFAULT-VALUE}).")
  int contextLength = 128;

  @Option(names = "--lr", description = "Learning rate, in (0, 1] (default: ${DEFAULT-VALUE}).")
  double learningRate = 1e-3;

  @Option(
      names = "--lr-warmup",
      paramLabel = "<fraction>",
      description =
          "Share of the run over which the learning rate rises linearly from 0, in [0, 0.5]"
              + " (default: ${DEFAULT-VALUE} = none).")
  double lrWarmup = 0;

  @Option(
      names = "--lr-decay",
      paramLabel = "<none|cosine|linear>",
      description =
          "Learning-rate decay after the warm-up, to a tenth of --lr at the last step"
              + " (default: ${DEFAULT-VALUE}).")
  String lrDecay = "none";

  @Option(
      names = "--grad-clip",
      paramLabel = "<norm>",
      description =
          "Clip each parameter's gradient to this L2 norm before the updater; 0 = off"
              + " (default: ${DEFAULT-VALUE}).")
  double gradClip = 0;

  /** Copies these options into a run's config. */
  void applyTo(TrainConfig c) {
    c.batchSize = batchSize;
    c.contextLength = contextLength;
    c.learningRate = learningRate;
    c.lrWarmup = lrWarmup;
    c.lrDecay = lrDecay;
    c.gradClip = gradClip;
  }
}
