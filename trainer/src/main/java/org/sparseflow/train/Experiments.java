package org.sparseflow.train;

import java.io.IOException;
import java.nio.file.Path;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.data.TokenSplit;
import org.sparseflow.ops.config.StrictConfigReader;

/** Creates trainers for new runs and for resumed ones. */
public final class Experiments {

  private Experiments() {}

  /** A new run of {@code config} into {@code runDir} (must be new or empty). */
  public static Trainer start(TrainConfig config, Path runDir) throws IOException {
    return start(config, runDir, false);
  }

  /**
   * A new run of {@code config}. Everything is validated and built before the run directory is
   * claimed ({@link RunDirectory#create(Path, boolean)}, atomic); with {@code suffixOnCollision} a
   * taken {@code runDir} becomes {@code runDir-2}, {@code runDir-3}, ... (default names), otherwise
   * it is an error (explicit {@code --out}).
   */
  public static Trainer start(TrainConfig config, Path runDir, boolean suffixOnCollision)
      throws IOException {
    config.validate();
    ModelCatalog.validate(config.model);
    Corpus corpus = Corpus.resolve(config.corpus);
    long distinct = corpus.text().codePoints().distinct().limit(2).count();
    if (distinct < 2) {
      throw new IllegalArgumentException(
          "--corpus: "
              + corpus.source()
              + " has "
              + (distinct == 0 ? "no characters" : "only 1 distinct character")
              + "; allowed: a UTF-8 text with at least 2 distinct characters");
    }
    CharTokenizer tokenizer = CharTokenizer.fit(corpus.text());
    // fail on a too-small corpus before building anything
    TokenSplit.of(
        tokenizer.encode(corpus.text()),
        config.trainFraction,
        config.testFraction,
        config.contextLength);
    SparsityDrivers.Resolved sparsity = SparsityDrivers.resolve(config);
    if (!suffixOnCollision) {
      RunDirectory.checkNew(runDir); // fail early; the claim below is what makes it safe
    }
    Nd4j.getRandom().setSeed(config.seed);
    TrainableModel model = ModelCatalog.create(config, tokenizer.vocabSize());
    SparsityDrivers.Applied applied = sparsity.apply(model, config);
    RunDirectory dir = RunDirectory.create(runDir, suffixOnCollision);
    Experiment exp = new Experiment(config, corpus, tokenizer, applied.model(), applied.driver());
    applied.driver().attach(applied.model(), config);
    Checkpoint.State state = new Checkpoint.State();
    state.config = config;
    state.modelKind = applied.model().kind();
    state.vocabulary = tokenizer.vocabulary();
    state.corpusSha256 = corpus.sha256();
    return new Trainer(exp, dir, state);
  }

  /**
   * Continues the run in {@code runDir} from its checkpoint, optionally to a new total step count
   * ({@code newSteps} null keeps the original). Validate, then mutate: the checkpoint (zip,
   * manifest, state ranges, model kind), the corpus, the sparsity config and the model are all
   * checked and loaded here, before the returned trainer writes anything; a failure leaves the run
   * directory byte-identical.
   */
  public static Trainer resume(Path runDir, Integer newSteps) throws IOException {
    RunDirectory dir = RunDirectory.open(runDir);
    Checkpoint cp = Checkpoint.read(dir.checkpoint());
    Checkpoint.State state = cp.state();
    TrainConfig config = state.config;
    if (newSteps != null) {
      if (newSteps < state.step) {
        throw new IllegalArgumentException(
            "--steps: "
                + newSteps
                + " is below the "
                + state.step
                + " steps already done in "
                + runDir);
      }
      config.steps = newSteps;
    }
    config.validate();
    if (state.step >= config.steps) {
      throw new IllegalArgumentException(
          "--resume: "
              + runDir
              + " is complete ("
              + state.step
              + "/"
              + config.steps
              + " steps); allowed: --steps N with N > "
              + state.step
              + " to train further");
    }
    Corpus corpus = Corpus.resolve(config.corpus);
    if (!corpus.sha256().equals(state.corpusSha256)) {
      throw new IllegalArgumentException(
          "--resume: corpus "
              + corpus.source()
              + " has changed since the run started (sha256 "
              + corpus.sha256().substring(0, 12)
              + "... != "
              + state.corpusSha256.substring(0, 12)
              + "...)");
    }
    CharTokenizer tokenizer = CharTokenizer.of(state.vocabulary);
    SparsityDrivers.Resolved sparsity = SparsityDrivers.resolve(config);
    TrainableModel model;
    SparsityDriver driver;
    try {
      model = ModelCatalog.load(state.modelKind, cp.model(), tokenizer.vocabSize(), config);
    } catch (IOException | RuntimeException e) {
      throw Checkpoint.corrupt(
          dir.checkpoint(),
          "entry model.bin cannot be loaded as a "
              + state.modelKind
              + " model ("
              + firstLine(e)
              + ")");
    }
    try {
      driver = sparsity.restore(model, config);
      if (cp.sparsity() != null) {
        driver.restoreState(cp.sparsity());
      }
      driver.attach(model, config);
    } catch (RuntimeException e) {
      throw Checkpoint.corrupt(
          dir.checkpoint(),
          "the sparsity state does not fit the model or config "
              + config.sparsity
              + " ("
              + firstLine(e)
              + ")");
    }
    Experiment exp = new Experiment(config, corpus, tokenizer, model, driver);
    return new Trainer(exp, dir, state);
  }

  /** The config stored in a run's summary.json, for re-running an experiment (read strictly). */
  public static TrainConfig configFromSummary(Path summary) {
    JsonNode node = StrictConfigReader.readFile(summary, "--from-summary: run summary");
    if (!node.has("config") || !node.get("config").isObject()) {
      throw new IllegalArgumentException(
          "--from-summary: "
              + summary
              + " has no 'config' mapping; allowed: a summary.json"
              + " written by 'sparseflow train'");
    }
    try {
      return Json.MAPPER.treeToValue(node.get("config"), TrainConfig.class);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "--from-summary: "
              + summary
              + ": field 'config' is not a training config ("
              + firstLine(e)
              + ")");
    }
  }

  private static String firstLine(Exception e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    int nl = m.indexOf('\n');
    return nl >= 0 ? m.substring(0, nl).trim() : m;
  }
}
