package org.sparseflow.cli;

import picocli.CommandLine.Option;

/**
 * {@code --density}: MST's target density, shared by {@code train} and {@code compare} as a picocli
 * mixin. The preset keeps its phases and mechanics, and every level of its sparsity schedule is
 * rescaled by one rule ({@code MstConfig#withTargetDensity}).
 */
final class DensityOption {

  @Option(
      names = "--density",
      paramLabel = "<d>",
      description =
          "MST target density at the end of the run, in (0, 1]; the preset's ultra-sparse level"
              + " keeps its ratio to it (default: the preset's).")
  Double density;
}
