package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.cli.SparseFlowCli;

/** Shared helpers of the command-line reliability tests: in-process runs, snapshots, fixtures. */
final class CliSupport {

  private CliSupport() {}

  /** Outcome of one in-process command line. */
  record Run(int code, String out, String err) {}

  static Run cli(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = SparseFlowCli.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(code, out.toString(), err.toString());
  }

  /** Exit {@code code} with exactly one stderr line starting "error: " and holding each part. */
  static void oneLineError(Run r, int code, String... parts) {
    assertEquals(code, r.code(), "exit code; stderr: " + r.err() + "\nstdout: " + r.out());
    String[] lines = r.err().strip().split("\\R");
    assertEquals(1, lines.length, "exactly one line on stderr, got:\n" + r.err());
    assertTrue(lines[0].startsWith("error: "), lines[0]);
    for (String p : parts) {
      assertTrue(lines[0].contains(p), "'" + p + "' in: " + lines[0]);
    }
    assertFalse(r.err().contains("\tat "), "no stack trace");
  }

  /** SHA-256 of every file under {@code dir} (dot files included), by relative path. */
  static Map<String, String> snapshot(Path dir) throws IOException {
    Map<String, String> m = new TreeMap<>();
    if (!Files.exists(dir)) {
      return m;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        if (Files.isRegularFile(p)) {
          m.put(dir.relativize(p).toString(), sha(Files.readAllBytes(p)));
        } else if (Files.isDirectory(p)) {
          m.put(dir.relativize(p) + "/", "dir");
        }
      }
    }
    return m;
  }

  static String sha(byte[] b) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> s = Files.walk(from)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        Path q = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(q);
        } else {
          Files.copy(p, q);
        }
      }
    }
  }

  /** A small corpus with enough text for context 8 and a validation split. */
  static Path tinyCorpus(Path dir) throws IOException {
    StringBuilder sb = new StringBuilder();
    String[] words = {"call", "me", "ishmael", "some", "years", "ago", "never", "mind", "how"};
    for (int i = 0; i < 400; i++) {
      sb.append(words[(i * 7 + i / 3) % words.length]).append(i % 11 == 0 ? ".\n" : " ");
    }
    Path f = dir.resolve("tiny-corpus.txt");
    Files.writeString(f, sb.toString(), StandardCharsets.UTF_8);
    return f;
  }

  /** The options of a training run that finishes in about a second. */
  static String[] tinyTrain(Path corpus, String model, int steps, Path out) {
    return new String[] {
      "train",
      "--model",
      model,
      "--corpus",
      corpus.toString(),
      "--steps",
      String.valueOf(steps),
      "--batch-size",
      "2",
      "--context-length",
      "8",
      "--eval-every",
      "2",
      "--eval-windows",
      "2",
      "--checkpoint-every",
      "1",
      "--plain-progress",
      "--out",
      out.toString()
    };
  }

  /** A saved DL4J MultiLayerNetwork (16-32-32-4) for sparsify. */
  static Path mlpZip(Path dir) throws IOException {
    MultiLayerConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(1)
            .updater(new Adam(1e-3))
            .list()
            .layer(new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.RELU).build())
            .layer(new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build())
            .layer(
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(4)
                    .activation(Activation.SOFTMAX)
                    .build())
            .build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    Path f = dir.resolve("mlp.zip");
    ModelSerializer.writeModel(net, f.toFile(), true);
    return f;
  }
}
