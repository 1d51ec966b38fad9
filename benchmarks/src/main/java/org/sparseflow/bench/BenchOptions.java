package org.sparseflow.bench;

import java.io.PrintStream;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * Parses a suite's picocli options object. Bad input becomes an IllegalArgumentException naming the
 * option, the value and what is allowed, so every suite reports argument errors alike.
 */
public final class BenchOptions {
  private BenchOptions() {}

  /**
   * Fills {@code options} (a picocli {@code @Command}) from {@code args}; prints the usage when
   * help was asked for.
   *
   * @param footer text after the option list, or null
   * @return false when help was printed (the suite should return), true otherwise
   * @throws IllegalArgumentException on an unknown option or a value of the wrong type
   */
  public static boolean parse(Object options, String[] args, String footer, PrintStream out) {
    CommandLine cl = new CommandLine(options);
    if (footer != null) {
      cl.getCommandSpec().usageMessage().footer(footer);
    }
    try {
      cl.parseArgs(args);
    } catch (ParameterException e) {
      throw new IllegalArgumentException(describe(e, cl), e);
    }
    if (cl.isUsageHelpRequested()) {
      cl.usage(out);
      return false;
    }
    return true;
  }

  private static String describe(ParameterException e, CommandLine cl) {
    ArgSpec spec = e.getArgSpec();
    String allowed = "usage: " + cl.getHelp().synopsis(0).trim();
    if (spec instanceof OptionSpec o && e.getValue() != null) {
      Class<?> t = o.type();
      String what =
          t == int.class || t == Integer.class || t == long.class || t == Long.class
              ? "an integer"
              : t == double.class || t == Double.class ? "a number" : allowed;
      return o.longestName() + " = " + e.getValue() + " is not allowed; allowed: " + what;
    }
    return e.getMessage() + "; allowed: " + allowed;
  }
}
