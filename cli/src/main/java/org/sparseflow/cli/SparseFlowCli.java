package org.sparseflow.cli;

import java.io.PrintWriter;
import java.util.Arrays;
import java.util.concurrent.Callable;
import org.sparseflow.train.Provenance;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The {@code sparseflow} command line: {@code train}, {@code compare}, {@code simulate}, {@code
 * sparsify}, {@code generate}, {@code presets}. User errors print one line {@code error: ...} and
 * exit 1 (usage errors exit 2, Ctrl-C during training 130); {@code --debug} adds stack traces and
 * verbose logging.
 */
@Command(
    name = "sparseflow",
    mixinStandardHelpOptions = true,
    versionProvider = SparseFlowCli.Version.class,
    description =
        "Sparse training for DL4J/SameDiff models: Mixed Sparsity Training and a simulated dataflow"
            + " chip.",
    footer = {
      "",
      "Run 'sparseflow <command> --help' for a command's options.",
      "Exit codes: 0 ok, 1 error, 2 bad usage, 3 sparsify selected no layer (nothing written), 130"
          + " interrupted (checkpoint saved)."
    })
public final class SparseFlowCli implements Callable<Integer> {

  /** Exit code for errors the user can fix (missing file, bad value...). */
  public static final int EXIT_ERROR = 1;

  /** Exit code for command-line syntax errors. */
  public static final int EXIT_USAGE = 2;

  /** Exit code when training was interrupted (Ctrl-C) and a checkpoint was saved. */
  public static final int EXIT_INTERRUPTED = 130;

  /** Commands owned by other modules' authors, added when present on the classpath. */
  @Option(
      names = "--debug",
      scope = ScopeType.INHERIT,
      description = "Show stack traces and verbose logs.")
  boolean debug;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getOut());
    return 0;
  }

  public static void main(String[] args) {
    // SameDiff prints "Added differentiated op ..." on stdout while building gradients; keep stdout
    // for results
    System.setOut(new QuietStdout(System.out));
    int code = run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true));
    if (!Shutdown.inProgress()) {
      System.exit(code);
    }
  }

  /** Runs the command line in-process (tests use this) and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    boolean debug = Arrays.asList(args).contains("--debug");
    configureLogging(debug);
    CommandLine cmd = commandLine(debug);
    cmd.setOut(out);
    cmd.setErr(err);
    return cmd.execute(args);
  }

  /** The command tree with error handling installed. */
  public static CommandLine commandLine(boolean debug) {
    CommandLine cmd = new CommandLine(new SparseFlowCli());
    cmd.addSubcommand("train", new TrainCommand());
    cmd.addSubcommand("compare", new CompareCommand());
    cmd.addSubcommand("simulate", new SimulateCommand());
    cmd.addSubcommand("sparsify", new SparsifyCommand());
    cmd.addSubcommand("generate", new GenerateCommand());
    cmd.addSubcommand("presets", new PresetsCommand());
    cmd.addSubcommand("help", new CommandLine.HelpCommand());
    cmd.setCaseInsensitiveEnumValuesAllowed(true);
    cmd.setExecutionExceptionHandler(
        (ex, commandLine, parseResult) -> {
          PrintWriter err = commandLine.getErr();
          if (debug) {
            ex.printStackTrace(err);
          }
          err.println("error: " + Errors.describe(ex) + (debug ? "" : "  (--debug shows details)"));
          err.flush();
          return EXIT_ERROR;
        });
    cmd.setParameterExceptionHandler(
        (ex, args) -> {
          PrintWriter err = ex.getCommandLine().getErr();
          if (debug) {
            ex.printStackTrace(err);
          }
          err.println(
              "error: "
                  + ex.getMessage()
                  + "  (try '"
                  + ex.getCommandLine().getCommandSpec().qualifiedName()
                  + " --help')");
          err.flush();
          return EXIT_USAGE;
        });
    return cmd;
  }

  private static void configureLogging(boolean debug) {
    // slf4j-simple reads these once, at first use; ND4J logs a lot at INFO on start-up
    setIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", debug ? "info" : "warn");
    setIfAbsent("org.slf4j.simpleLogger.logFile", "System.err");
    setIfAbsent("org.nd4j.log.initialization", debug ? "true" : "false");
    setIfAbsent("java.awt.headless", "true");
  }

  private static void setIfAbsent(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }

  /** Version from the jar's Maven metadata. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {
        "sparseflow "
            + Provenance.mavenVersion("org.sparseflow", "cli", "0.1.0")
            + " (DL4J "
            + Provenance.mavenVersion("org.deeplearning4j", "deeplearning4j-nn", "?")
            + ", Java "
            + System.getProperty("java.version")
            + ")"
      };
    }
  }
}
