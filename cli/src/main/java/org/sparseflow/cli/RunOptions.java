package org.sparseflow.cli;

import picocli.CommandLine.Option;

/**
 * Options that {@code train} and {@code compare} declare alike, as picocli mixins. Each is a mixin
 * of its own so that every command keeps its option order in the help.
 */
final class RunOptions {
  private RunOptions() {}

  /** {@code --corpus}: the text to train on; null means the bundled corpus. */
  static final class Corpus {
    @Option(
        names = "--corpus",
        paramLabel = "<file>",
        description =
            "UTF-8 text file, or bundled:state-of-the-union (default: the bundled" + " Moby-Dick).")
    String corpus;
  }

  /** {@code --seed}: the run's random seed. */
  static final class Seed {
    @Option(
        names = "--seed",
        description = "Random seed, any 64-bit integer (default: ${DEFAULT-VALUE}).")
    long seed = 42;
  }

  /** {@code --eval-windows}: validation windows per evaluation. */
  static final class EvalWindows {
    @Option(
        names = "--eval-windows",
        description = "Validation windows per evaluation, 1..100000 (default: ${DEFAULT-VALUE}).")
    int evalWindows = 64;
  }

  /** {@code --plain-progress}: plain progress lines even on a terminal. */
  static final class PlainProgress {
    @Option(
        names = "--plain-progress",
        description = "Print plain progress lines even on a terminal.")
    boolean plainProgress;
  }
}
