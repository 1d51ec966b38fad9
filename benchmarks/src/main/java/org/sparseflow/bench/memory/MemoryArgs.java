package org.sparseflow.bench.memory;

/**
 * Argument checks shared by the memory suites ({@link MemoryBenchmark}, {@link MemoryCapDemo}):
 * each failure names the option, the value and what is allowed.
 */
final class MemoryArgs {
  private MemoryArgs() {}

  /** A block pattern with a packed form. */
  static void checkPattern(String pattern) {
    if (pattern == null || !pattern.matches("block(8|16|32|64)")) {
      throw new IllegalArgumentException(
          "--pattern = " + pattern + " is not allowed; allowed: block8, block16, block32, block64");
    }
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
