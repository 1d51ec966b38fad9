package org.sparseflow.bench.memory;

import picocli.CommandLine.Option;

/**
 * The options both memory suites ({@link MemoryBenchmark}, {@link MemoryCapDemo}) train a case
 * with, as a picocli {@code @Mixin}: pattern (block or n:m), context, batch and seed. The suites
 * differ only in the default batch size.
 */
final class TrainingOptions {

  @Option(
      names = "--pattern",
      paramLabel = "P",
      description = "block8|16|32|64 or n:m (n:m: sparsity 1 - n/m)")
  String pattern = "block16";

  @Option(names = "--context", paramLabel = "T", description = "context length")
  int context = 64;

  @Option(names = "--batch", paramLabel = "B", description = "batch size")
  int batch;

  @Option(names = "--seed", paramLabel = "N", description = "seed")
  long seed = 42;

  /** Options with batch size {@code batch} unless {@code --batch} is given. */
  TrainingOptions(int batch) {
    this.batch = batch;
  }

  /** Checks the pattern, and {@code steps} (the suite's own option), context and batch. */
  void validate(int steps) {
    MemoryArgs.checkPattern(pattern);
    MemoryArgs.checkRun(steps, context, batch);
  }

  /** The case's model size: {@code model} (or custom) with this context and batch. */
  MemoryCase.Size size(String model, int dModel, int layers, int heads) {
    return new MemoryCase.Size(model, dModel, layers, heads, context, batch);
  }
}
