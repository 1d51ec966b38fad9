package org.sparseflow.cli;

import org.sparseflow.train.TrainConfig;
import picocli.CommandLine.Option;

/**
 * MST's options shared by {@code train} and {@code compare} as a picocli mixin: {@code --density}
 * (the preset keeps its phases and mechanics, and every level of its sparsity schedule is rescaled
 * by one rule, {@code MstConfig#withTargetDensity}), {@code --storage} and {@code --sparse-start}.
 */
final class DensityOption {

  @Option(
      names = "--density",
      paramLabel = "<d>",
      description =
          "MST target density at the end of the run, in (0, 1]; the preset's ultra-sparse level"
              + " keeps its ratio to it (default: the preset's).")
  Double density;

  @Option(
      names = "--storage",
      paramLabel = "<masked|packed>",
      description =
          "Where MST keeps the sparse weights of the SameDiff model: masked (dense arrays and a"
              + " mask, any schedule; default) or packed (kept blocks only, so weight, gradient"
              + " and optimizer memory follow density; a dense warm-up holds all blocks, so"
              + " dense-sized arrays, until the ultra-sparse phase: add --sparse-start to avoid"
              + " it). A DL4J model file keeps its own storage: MST drives its packed layers"
              + " (packed requires some), and training continues on the network MST rebuilds"
              + " when a phase needs other block slots.")
  String storage = "masked";

  @Option(
      names = "--sparse-start",
      description =
          "MST starts at its ultra-sparse level instead of pruning down from a dense warm-up.")
  boolean sparseStart;

  /** Copies the options into a run's config. */
  void applyTo(TrainConfig c) {
    c.mstDensity = density;
    c.mstStorage = storage;
    c.mstSparseStart = sparseStart;
  }
}
