package org.sparseflow.cli;

import picocli.CommandLine.Option;

/**
 * Batch shape and learning rate, shared by {@code train} and {@code compare} as a picocli mixin.
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
}
