package org.sparseflow.cli;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsified;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.ops.samediff.SparseFlowOps;
import org.sparseflow.train.AtomicFiles;
import org.sparseflow.train.SparsityDrivers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sparseflow sparsify --config <yaml> <in> <out>}: converts a saved model into its sparse
 * form and prints the per-layer density. Inputs: a DL4J ModelSerializer zip (MultiLayerNetwork or
 * ComputationGraph; trained weights are kept and masks computed from them or drawn, per the config)
 * or a SameDiff FlatBuffers file ({@code .fb}; rewritten graph). {@code --densify} does the reverse
 * (stock DL4J layers, zeros in place). Without {@code --config} the config comes from
 * -Dsparseflow.config, SPARSEFLOW_CONFIG or a classpath sparseflow.yaml; with none the model is
 * copied unchanged. The whole config is validated, {@code mst:} included. Exit codes: 0 written, 1
 * error, 2 bad usage, 3 the config selected no layer (warning on stderr, nothing written).
 */
@Command(
    name = "sparsify",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description =
        "Make a saved DL4J/SameDiff model sparse according to a sparsity config (or --densify it"
            + " back).",
    footer = {
      "",
      "The format of <in> is told by content (zip = DL4J, otherwise SameDiff FlatBuffers), so a"
          + " run's model.zip works.",
      "Config files: UTF-8, at most 1 MiB, one document, no duplicate keys, no anchors/aliases;"
          + " 'mst:' is checked too.",
      "Exit codes: 0 written, 1 error, 2 bad usage, 3 the config selected no layer (nothing"
          + " written)."
    })
public final class SparsifyCommand implements Callable<Integer> {

  @Option(
      names = {"-c", "--config"},
      paramLabel = "<yaml|json>",
      description =
          "Sparsity config file. Default: -Dsparseflow.config, $SPARSEFLOW_CONFIG, classpath"
              + " sparseflow.yaml.")
  Path config;

  @Option(
      names = "--densify",
      description = "Turn a sparse model back into stock DL4J layers with zeros in place.")
  boolean densify;

  @Option(
      names = "--seq-len",
      paramLabel = "<T>",
      description =
          "With --densify on a SameDiff graph with sparse attention: the sequence length T, when"
              + " the graph does not fix it statically.")
  int seqLen;

  @Option(
      names = "--report",
      paramLabel = "<file>",
      description = "Also write the report table to this file.")
  Path reportFile;

  @Parameters(
      index = "0",
      paramLabel = "<in>",
      description = "Saved model: DL4J .zip (MultiLayerNetwork/ComputationGraph) or SameDiff .fb")
  Path in;

  @Parameters(
      index = "1",
      paramLabel = "<out>",
      description = "Where to write the converted model (same format).")
  Path out;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter o = spec != null ? spec.commandLine().getOut() : new PrintWriter(System.out, true);
    PrintWriter e = spec != null ? spec.commandLine().getErr() : new PrintWriter(System.err, true);
    try {
      return run(o, e);
    } catch (IllegalArgumentException | IOException | UncheckedIOException ex) {
      String msg = ex.getMessage() != null ? ex.getMessage() : ex.toString();
      if (config != null && msg.startsWith("Sparsity config: ")) {
        // errors found while applying the config: name its file too
        msg = "Sparsity config " + config + ": " + msg.substring("Sparsity config: ".length());
      }
      e.println("error: " + msg.split("\\R", 2)[0]);
      e.flush();
      return 1;
    }
  }

  /** Exit code when the config selected no layer: nothing is written. */
  public static final int EXIT_NOTHING_MATCHED = 3;

  private void validateOptions() {
    if (!Files.exists(in)) {
      throw new IllegalArgumentException(
          "<in> = " + in + " does not exist; allowed: a DL4J model .zip or a SameDiff .fb file");
    }
    if (!Files.isRegularFile(in)) {
      throw new IllegalArgumentException(
          "<in> = " + in + " is not a file; allowed: a DL4J model .zip or a SameDiff .fb file");
    }
    if (in.toAbsolutePath().normalize().equals(out.toAbsolutePath().normalize())) {
      throw new IllegalArgumentException(
          "<out> = " + out + " is the input file; allowed: a different path");
    }
    if (Files.isDirectory(out)) {
      throw new IllegalArgumentException(
          "<out> = "
              + out
              + " is a directory; allowed: a file path (e.g. "
              + out.resolve("out")
              + ".zip)");
    }
    if (reportFile != null && Files.isDirectory(reportFile)) {
      throw new IllegalArgumentException(
          "--report = " + reportFile + " is a directory; allowed: a file path");
    }
    if (seqLen < 0 || seqLen > 1_048_576) {
      throw new IllegalArgumentException(
          "--seq-len = "
              + seqLen
              + "; allowed: 1..1048576, or 0 (the default) to read it from the"
              + " graph");
    }
    if (seqLen != 0 && !densify) {
      throw new IllegalArgumentException("--seq-len: only applies with --densify");
    }
    if (densify && config != null) {
      throw new IllegalArgumentException(
          "--config: cannot be combined with --densify (densify needs no config)");
    }
  }

  private int run(PrintWriter o, PrintWriter e) throws IOException {
    validateOptions();
    SparsityConfig cfg = null;
    if (!densify) {
      if (config != null) {
        cfg = SparsityConfig.load(config);
        SparsityDrivers.validateMstSection(cfg, config.toString());
      } else {
        cfg = SparsityConfig.resolve().orElse(null);
        if (cfg != null) {
          SparsityDrivers.validateMstSection(cfg, "(-Dsparseflow.config/SPARSEFLOW_CONFIG)");
        }
      }
      if (cfg == null) {
        o.println("No sparsity config given or found: the model is copied unchanged.");
      }
    }
    Kind kind = kindOf(in);
    SparsifyReport report;
    Runnable write;
    switch (kind) {
      case SAMEDIFF -> {
        SameDiff sd = loadSameDiff(in);
        if (densify) {
          Sparsify.densify(sd, seqLen);
          report = SparsifyReport.noConfig();
        } else {
          report = Sparsify.apply(cfg, sd).report();
        }
        write = () -> writeOut(os -> sd.save(new KeepOpen(os), true));
      }
      case MULTI_LAYER -> {
        MultiLayerNetwork net =
            loadDl4j(in, () -> ModelSerializer.restoreMultiLayerNetwork(in.toFile(), true));
        if (densify) {
          MultiLayerNetwork d = Sparsify.densify(net);
          write = () -> writeOut(os -> ModelSerializer.writeModel(d, os, false));
          report = SparsifyReport.noConfig();
        } else {
          Sparsified<MultiLayerNetwork> sp = Sparsify.apply(cfg, net);
          write = () -> writeOut(os -> ModelSerializer.writeModel(sp.model(), os, true));
          report = sp.report();
        }
      }
      default -> {
        ComputationGraph net =
            loadDl4j(in, () -> ModelSerializer.restoreComputationGraph(in.toFile(), true));
        if (densify) {
          ComputationGraph d = Sparsify.densify(net);
          write = () -> writeOut(os -> ModelSerializer.writeModel(d, os, false));
          report = SparsifyReport.noConfig();
        } else {
          Sparsified<ComputationGraph> sp = Sparsify.apply(cfg, net);
          write = () -> writeOut(os -> ModelSerializer.writeModel(sp.model(), os, true));
          report = sp.report();
        }
      }
    }
    if (!densify && cfg != null && !report.selectedAnything()) {
      // a "success" that changed nothing is how a wrong include/exclude goes unnoticed
      o.print(report.toString());
      o.flush();
      e.println(
          "warning: the sparsity config selected no layer of "
              + in
              + " (every layer stayed dense; see the table); nothing was written to "
              + out
              + " (exit code "
              + EXIT_NOTHING_MATCHED
              + ")");
      e.flush();
      return EXIT_NOTHING_MATCHED;
    }
    write.run();
    String text =
        densify
            ? "Densified " + kind.label + " written to " + out + "\n"
            : report.toString() + "Wrote sparse " + kind.label + " to " + out + "\n";
    o.print(text);
    o.flush();
    if (reportFile != null) {
      AtomicFiles.writeString(reportFile, text);
    }
    return 0;
  }

  private void writeOut(AtomicFiles.Writer w) {
    try {
      AtomicFiles.write(out, w);
    } catch (IOException ex) {
      throw new UncheckedIOException("cannot write <out> = " + out + ": " + ex.getMessage(), ex);
    }
  }

  /** SameDiff.save closes its stream; AtomicFiles still needs it open to fsync. */
  private static final class KeepOpen extends FilterOutputStream {
    KeepOpen(OutputStream os) {
      super(os);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len); // FilterOutputStream would write byte by byte
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }

  private static SameDiff loadSameDiff(Path file) {
    SparseFlowOps.registerAll(); // SameDiff.load re-creates SparseFlow ops by name
    try {
      return SameDiff.load(file.toFile(), true);
    } catch (RuntimeException ex) {
      throw new IllegalArgumentException(
          "<in> = "
              + file
              + " is not a readable SameDiff FlatBuffers file (truncated or corrupt: "
              + describe(ex)
              + "); allowed: a DL4J model .zip or a SameDiff .fb file");
    }
  }

  @FunctionalInterface
  private interface Loader<T> {
    T load() throws IOException;
  }

  private static <T> T loadDl4j(Path file, Loader<T> loader) {
    try {
      return loader.load();
    } catch (IOException | RuntimeException ex) {
      throw new IllegalArgumentException(
          "<in> = "
              + file
              + " is not a readable DL4J model zip (truncated or corrupt: "
              + describe(ex)
              + ")");
    }
  }

  private static String describe(Exception ex) {
    String m = ex.getMessage();
    String first = m == null ? "" : m.split("\\R", 2)[0];
    return ex.getClass().getSimpleName() + (first.isEmpty() ? "" : ": " + first);
  }

  enum Kind {
    MULTI_LAYER("MultiLayerNetwork"),
    GRAPH("ComputationGraph"),
    SAMEDIFF("SameDiff graph");
    final String label;

    Kind(String label) {
      this.label = label;
    }
  }

  /**
   * Tells the format by content, not by name: a zip (DL4J ModelSerializer; its configuration.json
   * tells MultiLayerNetwork from ComputationGraph) or else SameDiff FlatBuffers, which is what
   * {@code train} writes as model.zip for SameDiff models.
   */
  static Kind kindOf(Path file) throws IOException {
    byte[] head;
    try (InputStream is = Files.newInputStream(file)) {
      head = is.readNBytes(4);
    }
    if (head.length < 4) {
      throw new IllegalArgumentException(
          "<in> = "
              + file
              + " is too short to be a model ("
              + head.length
              + " bytes); allowed: a DL4J model .zip or a SameDiff .fb file");
    }
    if (head[0] != 'P' || head[1] != 'K') {
      return Kind.SAMEDIFF;
    }
    try (ZipFile z = new ZipFile(file.toFile())) {
      ZipEntry conf = z.getEntry("configuration.json");
      if (conf == null) {
        throw new IllegalArgumentException(
            "<in> = "
                + file
                + " is a zip without configuration.json; allowed: a DL4J ModelSerializer zip or a"
                + " SameDiff .fb file");
      }
      try (InputStream is = z.getInputStream(conf)) {
        String json = new String(is.readAllBytes(), StandardCharsets.UTF_8);
        return json.contains("\"vertices\"") ? Kind.GRAPH : Kind.MULTI_LAYER;
      }
    } catch (ZipException ze) {
      throw new IllegalArgumentException(
          "<in> = "
              + file
              + " is not a readable zip (truncated or corrupt: "
              + ze.getMessage()
              + ")");
    }
  }
}
