package org.sparseflow.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.train.Experiments;
import org.sparseflow.train.ProgressBar;
import org.sparseflow.train.RunDirectory;
import org.sparseflow.train.TrainConfig;
import org.sparseflow.train.Trainer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sparseflow train}: trains a reference GPT or a saved DL4J model, dense or sparse, into a
 * run directory.
 */
@Command(
    name = "train",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Train a character-level GPT (or a saved DL4J model) on a text corpus, dense or sparse.",
      "Writes a run directory: checkpoint.zip, metrics.jsonl, summary.json, model.zip,"
          + " plots/*.png.",
      "Ctrl-C saves a checkpoint; continue with --resume <run-dir>."
    })
public final class TrainCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--model",
      paramLabel = "<name|file.zip>",
      description =
          "gpt-mini, gpt-small, gpt-tiny (a one-minute demo), char-bigram (smoke tests), or a saved"
              + " DL4J model zip (default:"
              + " ${DEFAULT-VALUE}).")
  String model = "gpt-mini";

  @Mixin RunOptions.Corpus corpusOption;

  @Option(
      names = "--sparsity",
      paramLabel = "<preset|file.yaml>",
      description =
          "Sparsity preset (see 'sparseflow presets') or a YAML/JSON config file; omit for dense.")
  String sparsity;

  @Option(
      names = "--steps",
      description = "Training steps, 1..10000000 (default: ${DEFAULT-VALUE}).")
  int steps = 2000;

  @Mixin RunOptions.Seed seedOption;

  @Option(
      names = "--out",
      paramLabel = "<run-dir>",
      description =
          "New run directory: absent or empty (default: runs/<time>-<model>, with -2, -3, ..."
              + " added if taken).")
  Path out;

  @Option(
      names = "--resume",
      paramLabel = "<run-dir>",
      description =
          "Continue an interrupted run exactly; only --steps (a new total > steps done) and"
              + " --plain-progress may be added.")
  Path resume;

  @Option(
      names = "--from-summary",
      paramLabel = "<summary.json>",
      description =
          "Re-run the experiment recorded in a run's summary.json; only --out, --steps and"
              + " --plain-progress may be added.")
  Path fromSummary;

  @Mixin BatchOptions batch;

  @Mixin DensityOption density;

  @Option(
      names = "--eval-every",
      description = "Validation every N steps, 1..10000000 (default: ${DEFAULT-VALUE}).")
  int evalEvery = 100;

  @Mixin RunOptions.EvalWindows evalWindowsOption;

  @Option(
      names = "--test-fraction",
      description =
          "Share of the corpus, from the end of the held-out 10%%, kept as a test part that"
              + " validation never reads; its loss is reported once, at the end, in [0, 0.05]"
              + " (default: ${DEFAULT-VALUE}; 0.05 = the split `compare` uses, so validation"
              + " losses match compare's).")
  double testFraction = 0;

  @Option(
      names = "--checkpoint-every",
      description = "Checkpoint every N steps, 1..10000000 (default: ${DEFAULT-VALUE}).")
  int checkpointEvery = 200;

  @Mixin RunOptions.PlainProgress plainProgressOption;

  @Override
  public Integer call() throws Exception {
    Trainer trainer = createTrainer();
    VectorKernelsNote.printIfOff(spec.commandLine().getErr());
    PrintWriter out = spec.commandLine().getOut();
    out.println("run directory: " + trainer.runDirectory().path());
    out.flush();
    trainer.progress(
        System.err, !plainProgressOption.plainProgress && ProgressBar.stderrIsTerminal(), "");
    Trainer.Result r = Shutdown.guard(trainer, trainer::run);
    out.println(
        String.format(
            Locale.ROOT,
            "%s: step %d/%d, train loss %.4f, val loss %s%s, density %.3f, training FLOPs %s%s,"
                + " wall %s",
            r.status().name().toLowerCase(Locale.ROOT),
            r.step(),
            trainer.experiment().config().steps,
            r.trainLoss(),
            r.valLoss() == null ? "n/a" : String.format(Locale.ROOT, "%.4f", r.valLoss()),
            r.testLoss() == null
                ? ""
                : String.format(Locale.ROOT, ", test loss %.4f", r.testLoss()),
            r.density(),
            ProgressBar.si(r.flops()),
            trainer.experiment().driver().flopsAreEstimate() ? " (estimate)" : "",
            ProgressBar.duration(r.wallSeconds())));
    out.flush();
    return r.status() == Trainer.Status.COMPLETED ? 0 : SparseFlowCli.EXIT_INTERRUPTED;
  }

  /** Rejects options that {@code mode} would otherwise ignore silently. */
  private void onlyWith(String mode, String... allowed) {
    List<String> ok = new ArrayList<>(List.of(allowed));
    ok.add(mode);
    ok.add("--debug");
    for (var o : spec.commandLine().getParseResult().matchedOptions()) {
      if (!ok.contains(o.longestName())) {
        throw new IllegalArgumentException(
            mode
                + ": cannot be combined with "
                + o.longestName()
                + " (the run's settings come from its files); allowed with it: "
                + String.join(", ", allowed));
      }
    }
  }

  Trainer createTrainer() throws Exception {
    boolean stepsGiven = spec.commandLine().getParseResult().hasMatchedOption("--steps");
    if (resume != null) {
      onlyWith("--resume", "--steps", "--plain-progress");
      return Experiments.resume(resume, stepsGiven ? steps : null);
    }
    TrainConfig c;
    if (fromSummary != null) {
      onlyWith("--from-summary", "--out", "--steps", "--plain-progress");
      c = Experiments.configFromSummary(fromSummary);
      if (stepsGiven) {
        c.steps = steps;
      }
    } else {
      c = new TrainConfig();
      c.model = model;
      c.corpus = corpusOption.corpus == null ? Corpus.BUNDLED_NAME : corpusOption.corpus;
      c.sparsity = sparsity;
      c.steps = steps;
      c.seed = seedOption.seed;
      batch.applyTo(c);
      density.applyTo(c);
      c.evalEvery = evalEvery;
      c.evalWindows = evalWindowsOption.evalWindows;
      if (!(testFraction >= 0 && testFraction <= 0.05)) {
        throw new IllegalArgumentException(
            "--test-fraction: " + testFraction + " is outside [0, 0.05]");
      }
      c.testFraction = testFraction;
      c.checkpointEvery = checkpointEvery;
    }
    // a default name that is taken (two runs in the same second) gets a -2, -3, ... suffix
    Path dir = out != null ? out : RunDirectory.defaultPath(c.model);
    return Experiments.start(c, dir, out == null)
        .summaryExtra(
            "command_line", String.join(" ", spec.commandLine().getParseResult().originalArgs()));
  }
}
