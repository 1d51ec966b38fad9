package org.sparseflow.train;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.ops.config.StrictConfigReader;

/**
 * Text generation from a run directory: temperature sampling over the model's next-character
 * distribution.
 */
public final class Sampling {

  /** A model with its tokenizer and context length. */
  public record Loaded(TrainableModel model, CharTokenizer tokenizer, int contextLength) {}

  private Sampling() {}

  /**
   * Loads the run's model and tokenizer, checking every file first: the final model.zip when the
   * run completed, else the checkpoint's model; with no checkpoint, model.zip with the vocabulary,
   * model kind and context length recorded in summary.json. Errors name {@code --run-dir}, the file
   * and the problem.
   */
  public static Loaded load(Path runDir) throws IOException {
    if (!Files.isDirectory(runDir)) {
      throw new IllegalArgumentException(
          "--run-dir: "
              + runDir
              + " is not a directory; expected a run directory written by 'sparseflow train'");
    }
    RunDirectory dir = RunDirectory.existing(runDir);
    boolean hasModel = Files.isRegularFile(dir.finalModel());
    String kind;
    String vocabulary;
    TrainConfig config;
    byte[] bytes;
    Path from;
    if (Files.isRegularFile(dir.checkpoint())) {
      Checkpoint cp = Checkpoint.read(dir.checkpoint());
      Checkpoint.State st = cp.state();
      kind = st.modelKind;
      vocabulary = st.vocabulary;
      config = st.config;
      boolean completed = st.step >= st.config.steps;
      from = completed && hasModel ? dir.finalModel() : dir.checkpoint();
      bytes = completed && hasModel ? Files.readAllBytes(dir.finalModel()) : cp.model();
    } else if (hasModel) {
      if (!Files.isRegularFile(dir.summary())) {
        throw new IllegalArgumentException(
            "--run-dir: "
                + runDir
                + " has model.zip but neither checkpoint.zip nor summary.json, which hold its"
                + " vocabulary; expected a run directory written by 'sparseflow train'");
      }
      JsonNode s;
      try {
        s = StrictConfigReader.readFile(dir.summary(), "run summary");
        config = Json.MAPPER.treeToValue(s.path("config"), TrainConfig.class);
      } catch (IOException | IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "--run-dir: "
                + dir.summary()
                + " is not a valid summary.json ("
                + e.getMessage()
                + ")");
      }
      kind = s.path("model").path("kind").asText(null);
      vocabulary = s.path("vocabulary").asText(null);
      if (config == null
          || vocabulary == null
          || vocabulary.length() < 2
          || !("dl4j".equals(kind) || "samediff".equals(kind))) {
        throw new IllegalArgumentException(
            "--run-dir: "
                + dir.summary()
                + " lacks config, vocabulary (2+ characters) or model.kind (dl4j or samediff)");
      }
      from = dir.finalModel();
      bytes = Files.readAllBytes(from);
    } else {
      throw new IllegalArgumentException(
          "--run-dir: "
              + runDir
              + " has neither checkpoint.zip nor model.zip; expected a run directory written by"
              + " 'sparseflow train'");
    }
    CharTokenizer tok = CharTokenizer.of(vocabulary);
    TrainableModel model;
    try {
      model = ModelCatalog.load(kind, bytes, tok.vocabSize(), config);
    } catch (IOException | RuntimeException e) {
      String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      throw new IllegalArgumentException(
          "--run-dir: "
              + from
              + " does not hold a loadable "
              + kind
              + " model ("
              + m.split("\\R", 2)[0]
              + ")");
    }
    return new Loaded(model, tok, config.contextLength);
  }

  /** Generates {@code length} characters after {@code prompt}. */
  public static String generate(
      Loaded m, String prompt, int length, double temperature, SplittableRandom rnd) {
    int[] promptIds = m.tokenizer().encode(prompt);
    int ctx = m.contextLength();
    int[] seq = new int[promptIds.length + length];
    System.arraycopy(promptIds, 0, seq, 0, promptIds.length);
    int n = promptIds.length;
    for (int i = 0; i < length; i++) {
      int from = Math.max(0, n - ctx);
      int[] context = Arrays.copyOfRange(seq, from, n);
      double[] p = m.model().nextTokenProbabilities(context);
      seq[n++] = sample(p, temperature, rnd);
    }
    return m.tokenizer().decode(Arrays.copyOfRange(seq, promptIds.length, n));
  }

  /** Samples from p^(1/T), renormalised. */
  static int sample(double[] p, double temperature, SplittableRandom rnd) {
    double[] w = new double[p.length];
    double max = 0;
    for (double v : p) {
      max = Math.max(max, v);
    }
    double sum = 0;
    for (int i = 0; i < p.length; i++) {
      // work relative to the max to keep p^(1/T) in range for small T
      w[i] = p[i] <= 0 ? 0 : Math.exp(Math.log(p[i] / max) / temperature);
      sum += w[i];
    }
    double r = rnd.nextDouble() * sum;
    for (int i = 0; i < w.length; i++) {
      r -= w[i];
      if (r <= 0) {
        return i;
      }
    }
    return w.length - 1;
  }
}
