package org.sparseflow.train;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The training loop behind {@code sparseflow train} and {@code compare}. Writes the run directory
 * (checkpoint.zip, metrics.jsonl, plots/, summary.json, model.zip), and stops cleanly at a step
 * boundary when {@link #requestStop()} is called (the Ctrl-C shutdown hook does this), saving a
 * checkpoint from which {@link Experiments#resume} continues exactly: batches depend only on (seed,
 * step), ND4J's RNG is reseeded from (seed, step) before every step, and the model, optimizer and
 * sparsity-driver state are in the checkpoint.
 */
public final class Trainer implements Stoppable {

  private static final Logger log = LoggerFactory.getLogger(Trainer.class);

  public enum Status {
    COMPLETED,
    INTERRUPTED
  }

  /** Outcome of {@link #run()}. */
  public record Result(
      Status status,
      long step,
      double trainLoss,
      Double valLoss,
      Double testLoss,
      double flops,
      double density,
      double wallSeconds,
      Path runDir) {}

  /**
   * Called after every step with that step's metrics record (tests use it to interrupt at a given
   * step).
   */
  @FunctionalInterface
  public interface StepListener {
    void afterStep(Trainer trainer, long step, Map<String, Object> metrics);
  }

  private final Experiment exp;
  private final RunDirectory dir;
  private final Checkpoint.State state;
  private final List<StepListener> listeners = new ArrayList<>();
  private final FinishLatch finished = new FinishLatch();
  private Double testLoss;
  private volatile boolean stopRequested;
  private PrintStream progressOut = System.err;
  private boolean interactive = ProgressBar.stderrIsTerminal();
  private String label = "";
  private Map<String, Object> extraSummary = new LinkedHashMap<>();

  Trainer(Experiment exp, RunDirectory dir, Checkpoint.State state) {
    this.exp = exp;
    this.dir = dir;
    this.state = state;
  }

  public Trainer progress(PrintStream out, boolean interactive, String label) {
    this.progressOut = out;
    this.interactive = interactive;
    this.label = label;
    return this;
  }

  public Trainer addListener(StepListener l) {
    listeners.add(l);
    return this;
  }

  /** Adds entries to summary.json (e.g. the command line used). */
  public Trainer summaryExtra(String key, Object value) {
    extraSummary.put(key, value);
    return this;
  }

  public Experiment experiment() {
    return exp;
  }

  public RunDirectory runDirectory() {
    return dir;
  }

  /** Asks the loop to stop after the current step and save a checkpoint. Safe from any thread. */
  @Override
  public void requestStop() {
    stopRequested = true;
  }

  /** Waits until {@link #run()} has returned (after its final checkpoint). */
  @Override
  public boolean awaitFinished(long timeout, TimeUnit unit) throws InterruptedException {
    return finished.await(timeout, unit);
  }

  public Result run() throws IOException {
    return finished.run(this::loop);
  }

  private Result loop() throws IOException {
    TrainConfig c = exp.config();
    TrainableModel model = exp.model();
    SparsityDriver driver = exp.driver();
    long startStep = state.step;
    var sampler = exp.trainSampler();
    ProgressBar bar = new ProgressBar(progressOut, interactive, c.steps, label);
    writeSummary("running", null);
    double sessionStart = System.nanoTime() / 1e9;
    double elapsedAtStart = state.elapsedSeconds;
    try (MetricsLog metrics = new MetricsLog(dir.metrics())) {
      metrics.open(startStep);
      if (startStep == 0) {
        double val0 = exp.validationLoss();
        state.lastValLoss = val0;
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("step", 0L);
        rec.put("val_loss", val0);
        rec.put("density", driver.density());
        rec.put("flops", 0.0);
        rec.put("elapsed_s", 0.0);
        metrics.append(rec);
      }
      while (state.step < c.steps && !stopRequested) {
        long step = state.step;
        Nd4j.getRandom().setSeed(c.seed * 1_000_003L + step);
        long fitStart = System.nanoTime();
        double loss = model.fit(sampler.windows(step));
        driver.afterFit(model);
        double stepSeconds = (System.nanoTime() - fitStart) / 1e9;
        if (!Double.isFinite(loss)) {
          throw new IllegalStateException(
              "training diverged at step "
                  + (step + 1)
                  + ": loss is "
                  + loss
                  + "; try a lower --lr (now "
                  + c.learningRate
                  + ")");
        }
        state.step = step + 1;
        state.cumulativeFlops += driver.stepFlops(step);
        state.lastLoss = loss;
        state.elapsedSeconds = elapsedAtStart + (System.nanoTime() / 1e9 - sessionStart);
        Double val = null;
        if (state.step % c.evalEvery == 0 || state.step == c.steps) {
          val = exp.validationLoss();
          state.lastValLoss = val;
        }
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("step", state.step);
        rec.put("loss", loss);
        if (val != null) {
          rec.put("val_loss", val);
        }
        rec.put("density", driver.density());
        rec.put("flops", state.cumulativeFlops);
        rec.put("elapsed_s", state.elapsedSeconds);
        rec.put("step_s", stepSeconds); // the training step alone (no evaluation, no checkpoint)
        rec.putAll(driver.stepMetrics());
        metrics.append(rec);
        bar.update(
            state.step,
            startStep,
            System.nanoTime() / 1e9 - sessionStart,
            loss,
            val,
            driver.density(),
            state.cumulativeFlops);
        if (state.step % c.checkpointEvery == 0 && state.step < c.steps) {
          saveCheckpoint();
        }
        for (StepListener l : listeners) {
          l.afterStep(this, state.step, rec);
        }
      }
    }
    bar.finish();
    saveCheckpoint();
    boolean done = state.step >= c.steps;
    if (done) {
      saveFinalModel();
      testLoss = exp.testLoss(); // once, at the end: nothing during training looks at it
    }
    writePlots();
    writeSummary(done ? "completed" : "interrupted", null);
    if (!done) {
      progressOut.println(
          "interrupted at step "
              + state.step
              + "/"
              + c.steps
              + "; checkpoint saved. Resume with: sparseflow train --resume "
              + dir.path());
    }
    return new Result(
        done ? Status.COMPLETED : Status.INTERRUPTED,
        state.step,
        state.lastLoss,
        state.lastValLoss,
        testLoss,
        state.cumulativeFlops,
        driver.density(),
        state.elapsedSeconds,
        dir.path());
  }

  /**
   * Writes checkpoint.zip atomically (the path used on normal end, periodically, and on Ctrl-C).
   */
  public void saveCheckpoint() throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    exp.model().save(buf);
    new Checkpoint(state, buf.toByteArray(), exp.driver().saveState()).writeTo(dir.checkpoint());
  }

  private void saveFinalModel() throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    exp.model().save(buf);
    AtomicFiles.write(dir.finalModel(), out -> out.write(buf.toByteArray()));
  }

  private void writePlots() {
    try {
      Plots.runPlots(
          dir.plots(),
          MetricsLog.read(dir.metrics()),
          label.isEmpty() ? exp.driver().description() : label);
      exp.driver().writePlots(dir.plots());
    } catch (IOException | RuntimeException e) {
      log.warn("could not write plots to {}: {}", dir.plots(), e.toString());
    }
  }

  private void writeSummary(String status, String error) throws IOException {
    ObjectNode s = Json.object();
    s.put("status", status);
    if (error != null) {
      s.put("error", error);
    }
    s.set("config", Json.MAPPER.valueToTree(exp.config()));
    ObjectNode corpus = s.putObject("corpus");
    corpus.put("name", exp.corpus().name());
    corpus.put("source", exp.corpus().source());
    corpus.put("sha256", exp.corpus().sha256());
    corpus.put("size_bytes", exp.corpus().sizeBytes());
    corpus.put("train_tokens", exp.split().train().length);
    corpus.put("validation_tokens", exp.split().validation().length);
    corpus.put("test_tokens", exp.split().test().length);
    s.put("vocabulary", exp.tokenizer().vocabulary());
    ObjectNode m = s.putObject("model");
    m.put("kind", exp.model().kind());
    m.put("parameters", exp.model().parameterCount());
    m.put("sparsity", exp.driver().description());
    ObjectNode r = s.putObject("results");
    r.put("steps_done", state.step);
    r.put("final_train_loss", state.lastLoss);
    if (state.lastValLoss != null) {
      r.put("final_val_loss", state.lastValLoss);
    }
    if (testLoss != null) {
      r.put("final_test_loss", testLoss);
    }
    r.put("training_flops", state.cumulativeFlops);
    r.put("training_flops_estimated", exp.driver().flopsAreEstimate());
    r.put("final_density", exp.driver().density());
    r.put("wall_seconds", state.elapsedSeconds);
    s.set("provenance", Json.MAPPER.valueToTree(Provenance.collect()));
    s.put("rerun", "sparseflow train --from-summary " + dir.summary() + " --out <new-run-dir>");
    s.put("resume", "sparseflow train --resume " + dir.path());
    s.set("extra", Json.MAPPER.valueToTree(extraSummary));
    AtomicFiles.writeString(dir.summary(), Json.pretty(s));
  }

  Checkpoint.State state() {
    return state;
  }

  static boolean isEmptyDir(Path p) throws IOException {
    try (var s = Files.list(p)) {
      return s.findAny().isEmpty();
    }
  }
}
