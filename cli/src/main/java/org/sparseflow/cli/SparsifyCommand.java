package org.sparseflow.cli;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.zip.ZipEntry;
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
 * copied unchanged.
 */
@Command(
    name = "sparsify",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description =
        "Make a saved DL4J/SameDiff model sparse according to a sparsity config (or --densify it"
            + " back).")
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
      return run(o);
    } catch (IllegalArgumentException | IOException | java.io.UncheckedIOException ex) {
      e.println("error: " + (ex.getMessage() != null ? ex.getMessage() : ex.toString()));
      e.flush();
      return 1;
    }
  }

  private int run(PrintWriter o) throws IOException {
    if (!Files.isRegularFile(in)) {
      throw new IllegalArgumentException(
          "<in> = "
              + in
              + " does not exist or is not a file; allowed: a DL4J model .zip or a SameDiff .fb"
              + " file");
    }
    if (in.toAbsolutePath().normalize().equals(out.toAbsolutePath().normalize())) {
      throw new IllegalArgumentException(
          "<out> = " + out + " is the input file; allowed: a different path");
    }
    SparsityConfig cfg = null;
    if (!densify) {
      cfg = config != null ? SparsityConfig.load(config) : SparsityConfig.resolve().orElse(null);
      if (cfg == null) {
        o.println("No sparsity config given or found: the model is copied unchanged.");
      }
    }
    Kind kind = kindOf(in);
    SparsifyReport report;
    switch (kind) {
      case SAMEDIFF -> {
        SparseFlowOps.registerAll(); // SameDiff.load re-creates SparseFlow ops by name
        SameDiff sd = SameDiff.load(in.toFile(), true);
        if (densify) {
          if (seqLen < 0) {
            throw new IllegalArgumentException(
                "--seq-len = "
                    + seqLen
                    + "; allowed: a sequence length > 0, or 0 (the default) to read it from the"
                    + " graph");
          }
          Sparsify.densify(sd, seqLen);
          report = SparsifyReport.noConfig();
        } else {
          report = Sparsify.apply(cfg, sd).report();
        }
        // never a half-written file at <out>; SameDiff.save closes its stream, AtomicFiles still
        // needs it to fsync
        AtomicFiles.write(
            out,
            os ->
                sd.save(
                    new java.io.FilterOutputStream(os) {
                      @Override
                      public void write(byte[] b, int off, int len) throws IOException {
                        out.write(b, off, len); // FilterOutputStream would write byte by byte
                      }

                      @Override
                      public void close() throws IOException {
                        flush();
                      }
                    },
                    true));
      }
      case MULTI_LAYER -> {
        MultiLayerNetwork net = ModelSerializer.restoreMultiLayerNetwork(in.toFile(), true);
        if (densify) {
          AtomicFiles.write(
              out, os -> ModelSerializer.writeModel(Sparsify.densify(net), os, false));
          report = SparsifyReport.noConfig();
        } else {
          Sparsified<MultiLayerNetwork> s = Sparsify.apply(cfg, net);
          AtomicFiles.write(out, os -> ModelSerializer.writeModel(s.model(), os, true));
          report = s.report();
        }
      }
      default -> {
        ComputationGraph net = ModelSerializer.restoreComputationGraph(in.toFile(), true);
        if (densify) {
          AtomicFiles.write(
              out, os -> ModelSerializer.writeModel(Sparsify.densify(net), os, false));
          report = SparsifyReport.noConfig();
        } else {
          Sparsified<ComputationGraph> s = Sparsify.apply(cfg, net);
          AtomicFiles.write(out, os -> ModelSerializer.writeModel(s.model(), os, true));
          report = s.report();
        }
      }
    }
    String text =
        densify
            ? "Densified " + kind.label + " written to " + out + "\n"
            : report.toString() + "Wrote sparse " + kind.label + " to " + out + "\n";
    o.print(text);
    o.flush();
    if (reportFile != null) {
      Files.writeString(reportFile, text, StandardCharsets.UTF_8);
    }
    return 0;
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
   * Reads the zip's configuration.json to tell MultiLayerNetwork from ComputationGraph; non-zip =
   * SameDiff.
   */
  static Kind kindOf(Path file) throws IOException {
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    if (!name.endsWith(".zip")) {
      if (name.endsWith(".fb") || name.endsWith(".sd") || name.endsWith(".flatbuffers")) {
        return Kind.SAMEDIFF;
      }
    }
    File f = file.toFile();
    try (ZipFile z = new ZipFile(f)) {
      ZipEntry conf = z.getEntry("configuration.json");
      if (conf == null) {
        throw new IllegalArgumentException(
            "<in> = "
                + file
                + " is a zip without configuration.json; allowed: a DL4J ModelSerializer zip");
      }
      try (InputStream is = z.getInputStream(conf)) {
        String json = new String(is.readAllBytes(), StandardCharsets.UTF_8);
        return json.contains("\"vertices\"") ? Kind.GRAPH : Kind.MULTI_LAYER;
      }
    } catch (java.util.zip.ZipException ze) {
      if (name.endsWith(".zip")) {
        throw new IllegalArgumentException(
            "<in> = " + file + " is not a readable zip (" + ze.getMessage() + ")");
      }
      return Kind.SAMEDIFF;
    }
  }
}
