package org.sparseflow.train;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.sparseflow.examples.data.CharTokenizer;

/**
 * Text generation from a run directory: temperature sampling over the model's next-character
 * distribution.
 */
public final class Sampling {

  /** A model with its tokenizer and context length. */
  public record Loaded(TrainableModel model, CharTokenizer tokenizer, int contextLength) {}

  private Sampling() {}

  /** Loads model.zip (or the checkpoint's model when training did not finish) and the tokenizer. */
  public static Loaded load(Path runDir) throws IOException {
    if (!Files.isDirectory(runDir)) {
      throw new IllegalArgumentException(
          "--run-dir: "
              + runDir
              + " is not a directory; expected a run directory written by 'sparseflow train'");
    }
    RunDirectory dir = RunDirectory.open(runDir.toAbsolutePath());
    Checkpoint cp = Checkpoint.read(dir.checkpoint());
    CharTokenizer tok = CharTokenizer.of(cp.state().vocabulary);
    TrainableModel model;
    if (Files.isRegularFile(dir.finalModel()) && "dl4j".equals(cp.state().modelKind)) {
      try (InputStream in = Files.newInputStream(dir.finalModel())) {
        model = Dl4jModel.load(in, tok.vocabSize());
      }
    } else {
      model =
          ModelCatalog.load(cp.state().modelKind, cp.model(), tok.vocabSize(), cp.state().config);
    }
    return new Loaded(model, tok, cp.state().config.contextLength);
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
      int[] context = java.util.Arrays.copyOfRange(seq, from, n);
      double[] p = m.model().nextTokenProbabilities(context);
      seq[n++] = sample(p, temperature, rnd);
    }
    return m.tokenizer().decode(java.util.Arrays.copyOfRange(seq, promptIds.length, n));
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
