package org.sparseflow.bench;

import picocli.CommandLine.Option;

/**
 * The {@code -h}/{@code --help} option of every suite, as a picocli {@code @Mixin}; {@link
 * BenchOptions#parse} prints the usage when it is given.
 */
public final class HelpOption {

  @Option(
      names = {"-h", "--help"},
      usageHelp = true,
      description = "print this help")
  boolean help;
}
