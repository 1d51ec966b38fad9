package org.sparseflow.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.sparseflow.train.Comparison;
import org.sparseflow.train.ProgressBar;
import org.sparseflow.train.RunDirectory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sparseflow compare}: the main job. Dense vs MST on gpt-mini and the bundled corpus, a
 * side-by-side table, a plot of validation loss against training FLOPs, and a (simulated)
 * dataflow-chip vs GPU estimate.
 */
@Command(
    name = "compare",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Dense vs MST on the same model, data, seed and steps: table, loss-vs-FLOPs plot, simulated"
          + " chip vs GPU.",
      "With no options: gpt-mini on the bundled corpus, "
          + Comparison.DEFAULT_STEPS
          + " steps per run (under 15 minutes on a 2-core CPU).",
      "Simulated numbers are labelled SIMULATED."
    })
public final class CompareCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Option(
      names = "--model",
      paramLabel = "<name|file.zip>",
      description = "Model (default: ${DEFAULT-VALUE}).")
  String model = "gpt-mini";

  @Mixin RunOptions.Corpus corpusOption;

  @Option(
      names = "--sparsity",
      paramLabel = "<preset|file.yaml>",
      description = "Sparse side of the comparison (default: ${DEFAULT-VALUE}).")
  String sparsity = "mst-gpt-mini-block16";

  @Option(
      names = "--steps",
      description =
          "Training steps per run, 1..10000000 (default: ${DEFAULT-VALUE}; fits 15 minutes on a"
              + " 2-core CPU).")
  int steps = Comparison.DEFAULT_STEPS;

  @Mixin RunOptions.Seed seedOption;

  @Mixin BatchOptions batch;

  @Mixin DensityOption density;

  @Option(
      names = "--dense-lr",
      split = ",",
      paramLabel = "<lr,lr,...>",
      description =
          "Learning rates for the dense baseline, each in (0, 1] (default: --lr only). With"
              + " several, dense trains once per rate and the sparse run is measured against the"
              + " best one.")
  List<Double> denseLearningRates;

  @Option(
      names = "--eval-every",
      description = "Validation every N steps, 1..10000000 (default: steps/10).")
  Integer evalEvery;

  @Mixin RunOptions.EvalWindows evalWindowsOption;

  @Option(
      names = "--out",
      paramLabel = "<dir>",
      description =
          "Output directory, absent or empty (default: runs/<time>-compare, with -2, -3, ... added"
              + " if taken).")
  Path out;

  @Option(names = "--no-simulate", description = "Skip the dataflow simulation.")
  boolean noSimulate;

  @Mixin RunOptions.PlainProgress plainProgressOption;

  @Override
  public Integer call() throws Exception {
    Comparison.Options o = new Comparison.Options();
    o.model = model;
    o.corpus = corpusOption.corpus;
    o.sparsity = sparsity;
    o.steps = steps;
    o.seed = seedOption.seed;
    o.batchSize = batch.batchSize;
    o.contextLength = batch.contextLength;
    o.learningRate = batch.learningRate;
    o.lrWarmup = batch.lrWarmup;
    o.lrDecay = batch.lrDecay;
    o.gradClip = batch.gradClip;
    o.density = density.density;
    o.storage = density.storage;
    o.sparseStart = density.sparseStart;
    o.denseLearningRates = denseLearningRates == null ? List.of() : denseLearningRates;
    o.evalEvery = evalEvery == null ? Math.max(1, steps / 10) : evalEvery;
    o.evalWindows = evalWindowsOption.evalWindows;
    o.simulate = !noSimulate;
    Path dir = out != null ? out : RunDirectory.defaultPath("compare");
    o.suffixOnCollision = out == null;
    var stdout = spec.commandLine().getOut();
    Comparison comparison =
        new Comparison(
            o,
            dir,
            stdout,
            System.err,
            !plainProgressOption.plainProgress && ProgressBar.stderrIsTerminal());
    VectorKernelsNote.printIfOff(spec.commandLine().getErr());
    Comparison.Outcome outcome = Shutdown.guardComparison(comparison);
    return outcome.interrupted() ? SparseFlowCli.EXIT_INTERRUPTED : 0;
  }
}
