package org.sparseflow.train;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ArrayNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;

/**
 * Dense vs sparse on the same model, data, seed and step budget: two run directories ({@code
 * dense/}, {@code <sparsity>/}), a side-by-side table, {@code val_loss_vs_flops.png}, {@code
 * comparison.json}, and a simulated dataflow-chip vs GPU estimate for both trained models.
 */
public final class Comparison implements Stoppable {

  /**
   * Steps per run for the no-argument {@code compare}: chosen so both gpt-mini runs, their
   * evaluations and the simulation finish in under 15 minutes on a 2-core CPU.
   */
  public static final int DEFAULT_STEPS = 200;

  /** Options; public fields. */
  public static final class Options {
    public String model = "gpt-mini";
    public String corpus;
    public String sparsity = "mst-gpt-mini-block16";
    public int steps = DEFAULT_STEPS;
    public long seed = 42;
    public int batchSize = 16;
    public int contextLength = 128;
    public double learningRate = 1e-3;

    /** MST's target density for the sparse runs (null = the preset's); dense runs ignore it. */
    public Double density;

    /** MST's storage for the sparse runs ({@code masked} or {@code packed}). */
    public String storage = "masked";

    /** Whether the sparse runs start at MST's ultra-sparse level (no dense warm-up). */
    public boolean sparseStart;

    /**
     * Learning rates of the dense baseline; empty = {@link #learningRate} only. With several, dense
     * trains once per rate and the sparse runs are compared with the best of them (lowest final
     * validation loss), so dense gets a tuning budget of its own.
     */
    public List<Double> denseLearningRates = new ArrayList<>();

    /** Learning-rate warm-up share, decay and gradient clip, the same for every run. */
    public double lrWarmup = 0;

    public String lrDecay = "none";
    public double gradClip = 0;

    /**
     * Share of the corpus kept as a test part that no run, evaluation or dense-rate choice looks
     * at; the RESULT line reports each run's loss on it at the end.
     */
    public double testFraction = 0.05;

    public int evalEvery = 30;
    public int evalWindows = 64;
    public boolean simulate = true;

    /** Whether a taken output directory gets a -2, -3, ... suffix (default names) or fails. */
    public boolean suffixOnCollision;
  }

  /** One row of the table; {@code baseline} marks a dense run (one per dense learning rate). */
  public record Row(String name, Trainer.Result result, boolean flopsEstimated, boolean baseline) {}

  /** What {@link #run()} produced. */
  public record Outcome(List<Row> rows, boolean interrupted, Path dir, List<String> simulation) {}

  private final Options options;
  private Path dir;
  private final PrintWriter out;
  private final PrintStream progress;
  private final boolean interactive;
  private final FinishLatch finished = new FinishLatch();
  private volatile boolean stopRequested;
  private volatile Trainer current;

  public Comparison(
      Options options, Path dir, PrintWriter out, PrintStream progress, boolean interactive) {
    this.options = options;
    this.dir = dir;
    this.out = out;
    this.progress = progress;
    this.interactive = interactive;
  }

  @Override
  public void requestStop() {
    stopRequested = true;
    Trainer t = current;
    if (t != null) {
      t.requestStop();
    }
  }

  @Override
  public boolean awaitFinished(long timeout, TimeUnit unit) throws InterruptedException {
    return finished.await(timeout, unit);
  }

  public Outcome run() throws IOException {
    return finished.run(this::doRun);
  }

  private TrainConfig config(String sparsity, double learningRate) {
    TrainConfig c = new TrainConfig();
    c.model = options.model;
    c.corpus = options.corpus == null ? Corpus.BUNDLED_NAME : options.corpus;
    c.sparsity = sparsity;
    c.mstDensity = sparsity == null ? null : options.density;
    c.mstStorage = sparsity == null ? "masked" : options.storage;
    c.mstSparseStart = sparsity != null && options.sparseStart;
    c.steps = options.steps;
    c.seed = options.seed;
    c.batchSize = options.batchSize;
    c.contextLength = options.contextLength;
    c.learningRate = learningRate;
    c.lrWarmup = options.lrWarmup;
    c.lrDecay = options.lrDecay;
    c.gradClip = options.gradClip;
    c.testFraction = options.testFraction;
    c.evalEvery = options.evalEvery;
    c.evalWindows = options.evalWindows;
    c.checkpointEvery = Math.max(1, options.steps / 4);
    return c.validate();
  }

  private Outcome doRun() throws IOException {
    String sparseName =
        sparseLabel(options.sparsity)
            + (options.density == null
                ? ""
                : "-d" + BigDecimal.valueOf(options.density).stripTrailingZeros().toPlainString())
            + (options.sparseStart ? "-sparse-start" : "")
            + ("packed".equals(options.storage) ? "-packed" : "");
    Map<String, TrainConfig> variants = new LinkedHashMap<>();
    if (options.denseLearningRates.isEmpty()) {
      variants.put("dense", config(null, options.learningRate));
    } else {
      for (double lr : options.denseLearningRates) {
        if (!(lr > 0 && lr <= 1)) {
          throw new IllegalArgumentException(
              "--dense-lr: " + lr + " is not allowed; allowed: rates in (0, 1]");
        }
        String name = denseName(lr);
        if (variants.put(name, config(null, lr)) != null) {
          throw new IllegalArgumentException(
              "--dense-lr: " + lr + " is given twice; allowed: distinct rates");
        }
      }
    }
    int denseRuns = variants.size();
    variants.put(sparseName, config(options.sparsity, options.learningRate));
    // resolve everything that can fail on user input before the first long run starts
    for (TrainConfig c : variants.values()) {
      SparsityDrivers.resolve(c);
    }
    Corpus.resolve(
        variants.values().iterator().next().corpus); // a bad --corpus fails before the directory
    // claimed atomically; a taken default name gets a -2, -3, ... suffix
    dir = RunDirectory.create(dir, options.suffixOnCollision).path();
    out.println(
        "compare: "
            + options.model
            + ", "
            + options.steps
            + " steps per run, seed "
            + options.seed
            + ", output "
            + dir);
    out.flush();
    List<Row> rows = new ArrayList<>();
    for (Map.Entry<String, TrainConfig> v : variants.entrySet()) {
      if (stopRequested) {
        break;
      }
      Trainer t = Experiments.start(v.getValue(), dir.resolve(v.getKey()));
      t.progress(progress, interactive, String.format(Locale.ROOT, "%-6s", v.getKey()));
      current = t;
      if (stopRequested) {
        t.requestStop();
      }
      Trainer.Result r = t.run();
      current = null;
      releaseRunMemory();
      rows.add(
          new Row(
              v.getKey(), r, t.experiment().driver().flopsAreEstimate(), rows.size() < denseRuns));
      if (r.status() == Trainer.Status.INTERRUPTED) {
        out.println(
            "interrupted: run '"
                + v.getKey()
                + "' saved at step "
                + r.step()
                + "; resume it with: sparseflow train --resume "
                + r.runDir());
        out.flush();
        return new Outcome(rows, true, dir, List.of());
      }
    }
    printTable(rows);
    Map<String, List<JsonNode>> metrics = new LinkedHashMap<>();
    for (Row row : rows) {
      metrics.put(row.name(), MetricsLog.read(row.result().runDir().resolve("metrics.jsonl")));
    }
    for (String line : CompareResults.lines(rows, metrics)) {
      out.println(line);
    }
    Path chart = dir.resolve("val_loss_vs_flops.png");
    Plots.compareChart(chart, metrics);
    out.println("plot: " + chart);
    List<String> sim = List.of();
    if (options.simulate) {
      TrainConfig c0 = variants.values().iterator().next();
      int vocab =
          CharTokenizer.of(
                  Checkpoint.read(rows.get(0).result().runDir().resolve(Checkpoint.FILE_NAME))
                      .state()
                      .vocabulary)
              .vocabSize();
      sim = Simulations.compare(CompareResults.bestDenseAndSparse(rows), out, c0, vocab);
    }
    writeJson(rows, sim);
    out.flush();
    return new Outcome(rows, false, dir, sim);
  }

  /**
   * Frees what a finished run leaves behind before the next one starts: this thread's ND4J
   * workspaces, and, through a collection, the native buffers of the run's model (ND4J frees an
   * array's off-heap memory when its Java object is collected, and a large heap may go many runs
   * without a collection: a 4-rate dense sweep of gpt-mini grew one JVM to 8 GB resident).
   */
  private static void releaseRunMemory() {
    Nd4j.getWorkspaceManager().destroyAllWorkspacesForCurrentThread();
    System.gc();
  }

  /** Name of the dense run at learning rate {@code lr} in a sweep, e.g. {@code dense-lr0.002}. */
  static String denseName(double lr) {
    return "dense-lr" + BigDecimal.valueOf(lr).stripTrailingZeros().toPlainString();
  }

  static String sparseLabel(String sparsity) {
    String name = Path.of(sparsity).getFileName().toString();
    name = name.replaceAll("\\.(ya?ml|json)$", "").replaceAll("[^A-Za-z0-9._-]", "_");
    return name.equals("dense") ? "sparse" : name;
  }

  private void printTable(List<Row> rows) {
    Trainer.Result dense = CompareResults.bestDense(rows).result();
    int width = 10;
    for (Row row : rows) {
      width = Math.max(width, row.name().length());
    }
    String fmt = "%-" + width + "s %10s %10s %16s %11s %10s %9s%n";
    out.println();
    out.printf(
        Locale.ROOT,
        fmt,
        "run",
        "val loss",
        "train loss",
        "training FLOPs",
        "vs dense",
        "wall time",
        "density");
    for (Row row : rows) {
      Trainer.Result r = row.result();
      out.printf(
          Locale.ROOT,
          fmt,
          row.name(),
          r.valLoss() == null ? "n/a" : String.format(Locale.ROOT, "%.4f", r.valLoss()),
          String.format(Locale.ROOT, "%.4f", r.trainLoss()),
          ProgressBar.si(r.flops()) + (row.flopsEstimated() ? " (est)" : ""),
          String.format(Locale.ROOT, "%.2fx", dense.flops() / r.flops()),
          ProgressBar.duration(r.wallSeconds()),
          String.format(Locale.ROOT, "%.3f", r.density()));
    }
    out.println(
        "(val loss: mean cross-entropy in nats per character on the validation part of the"
            + " held-out 10%; test losses, on the part no run or choice looks at, are in the"
            + " RESULT line; FLOPs: training forward+backward; wall time measured on this machine, "
            + Runtime.getRuntime().availableProcessors()
            + " cores)");
    out.println();
  }

  private void writeJson(List<Row> rows, List<String> sim) throws IOException {
    ObjectNode root = Json.object();
    root.set("options", Json.MAPPER.valueToTree(options));
    ArrayNode arr = root.putArray("runs");
    for (Row row : rows) {
      ObjectNode n = arr.addObject();
      Trainer.Result r = row.result();
      n.put("name", row.name());
      n.put("dense_baseline", row.baseline());
      n.put("run_dir", r.runDir().toString());
      n.put("steps", r.step());
      n.put("train_loss", r.trainLoss());
      if (r.valLoss() != null) {
        n.put("val_loss", r.valLoss());
      }
      if (r.testLoss() != null) {
        n.put("test_loss", r.testLoss());
      }
      n.put("training_flops", r.flops());
      n.put("training_flops_estimated", row.flopsEstimated());
      n.put("wall_seconds", r.wallSeconds());
      n.put("final_density", r.density());
    }
    ArrayNode s = root.putArray("simulation_SIMULATED");
    sim.forEach(s::add);
    root.set("provenance", Json.MAPPER.valueToTree(Provenance.collect()));
    AtomicFiles.writeString(dir.resolve("comparison.json"), Json.pretty(root));
  }
}
