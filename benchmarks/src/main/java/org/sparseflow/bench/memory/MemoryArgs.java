package org.sparseflow.bench.memory;

import java.util.List;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Argument checks shared by the memory suites ({@link MemoryBenchmark}, {@link MemoryCapDemo}):
 * each failure names the option, the value and what is allowed.
 */
final class MemoryArgs {
  private MemoryArgs() {}

  /** A block or n:m pattern with a packed form. */
  static void checkPattern(String pattern) {
    if (pattern == null || !pattern.matches("block(8|16|32|64)|[0-9]+:[0-9]+")) {
      throw new IllegalArgumentException(
          "--pattern = "
              + pattern
              + " is not allowed; allowed: block8, block16, block32, block64, n:m (e.g. 2:4)");
    }
    if (pattern.contains(":")) {
      try {
        PatternSpec.parse(pattern);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--pattern = " + pattern + ": " + e.getMessage(), e);
      }
    }
  }

  /**
   * The sparsities of a run: an n:m pattern fixes the sparsity at 1 - n/m, so the default list is
   * replaced by that value and a list with any other value is refused.
   */
  static List<Double> sparsitiesFor(String pattern, List<Double> given, boolean isDefault) {
    double fixed = 1 - PatternSpec.parse(pattern).fixedDensity();
    if (Double.isNaN(fixed)) {
      return given;
    }
    for (double s : given) {
      if (!isDefault && Math.abs(s - fixed) > 1e-9) {
        throw new IllegalArgumentException(
            "--sparsities contains "
                + s
                + " with --pattern "
                + pattern
                + "; allowed: "
                + fixed
                + " (n:m fixes the sparsity at 1 - n/m)");
      }
    }
    return List.of(fixed);
  }

  /** A custom GPT size: d_model a positive multiple of heads, at least one layer. */
  static void checkSize(int dModel, int layers, int heads) {
    if (dModel < 1 || layers < 1 || heads < 1 || dModel % heads != 0) {
      throw new IllegalArgumentException(
          "--d-model/--layers/--heads = "
              + dModel
              + "/"
              + layers
              + "/"
              + heads
              + " is not allowed; allowed: d_model > 0 a multiple of heads, layers >= 1");
    }
  }

  /** Steps, context and batch of the training steps, each at least 1. */
  static void checkRun(int steps, int context, int batch) {
    if (steps < 1 || context < 1 || batch < 1) {
      throw new IllegalArgumentException(
          "--steps/--context/--batch = "
              + steps
              + "/"
              + context
              + "/"
              + batch
              + " is not allowed; allowed: each >= 1");
    }
  }
}
