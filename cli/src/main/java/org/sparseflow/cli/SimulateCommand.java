package org.sparseflow.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.sparseflow.dataflow.api.SimulateRunner;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sparseflow simulate}: one training step of a GPT model, sparse on a simulated dataflow
 * chip versus dense on a GPU. All logic lives in {@link SimulateRunner} (dataflow-backend).
 * SIMULATED numbers.
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    description = {
      "SIMULATED: time one training step of a GPT model on a dataflow chip (dataflow and"
          + " kernel-by-kernel modes)",
      "and compare it with the dense model on a GPU (kernel-by-kernel roofline). Assumptions:"
          + " docs/dataflow-model.md."
    })
public final class SimulateCommand implements Callable<Integer> {

  @Option(
      names = "--model",
      defaultValue = "gpt3-13b",
      description =
          "gpt-mini, gpt2-small, gpt3-13b, or a GPT .json file written by GptSpec.toJson() giving"
              + " layers, dModel, heads, ffn, seq and vocab (default: ${DEFAULT-VALUE})")
  String model;

  @Option(names = "--seq", description = "sequence length, 1..131072 (default: the model's)")
  Integer seq;

  @Option(
      names = "--layers",
      description = "number of decoder layers, 1..1000 (default: the model's)")
  Integer layers;

  @Option(
      names = "--batch",
      description =
          "sequences per micro-batch on one chip, 1..65536 (default: the model's, 1 for gpt3-13b)")
  Integer batch;

  @Option(
      names = "--global-batch",
      description =
          "sequences per optimizer step over all chips, 1..16777216 and a multiple of --chips x"
              + " --batch (default: the model's; gpt3-13b: 1024 = 2M tokens)")
  Integer globalBatch;

  @Option(
      names = "--sparsity",
      defaultValue = "0.875",
      description =
          "fraction of pruned weights in the sparse linear layers, in [0, 1) (default:"
              + " ${DEFAULT-VALUE})")
  double sparsity;

  @Option(
      names = "--pattern",
      defaultValue = "unstructured",
      description =
          "unstructured | block8 | block16 | block32 | block64 | N:M with 1 <= N <= M <= 64 (e.g."
              + " 2:4) (default: ${DEFAULT-VALUE})")
  String pattern;

  @Option(
      names = "--recompute",
      defaultValue = "attention",
      description = "activation recompute: none | attention | full (default: ${DEFAULT-VALUE})")
  String recompute;

  @Option(
      names = "--chip",
      defaultValue = "sn30",
      description = "sn10 | sn30 | sn40l (default: ${DEFAULT-VALUE})")
  String chip;

  @Option(names = "--chip-file", description = "your own chip JSON file (overrides --chip)")
  Path chipFile;

  @Option(
      names = "--baseline",
      defaultValue = "a100",
      description = "a100 (= a100-80gb) | a100-40gb | a100-80gb | h100 (default: ${DEFAULT-VALUE})")
  String baseline;

  @Option(names = "--gpu-file", description = "your own GPU JSON file (overrides --baseline)")
  Path gpuFile;

  @Option(
      names = "--chips",
      defaultValue = "8",
      description = "chips on each side, data parallel, 1..65536 (default: ${DEFAULT-VALUE})")
  int chips;

  @Option(
      names = "--out",
      description =
          "directory for report.json, trace.json (Chrome trace) and step-time.png (created if"
              + " absent; not a file)")
  Path out;

  @Option(
      names = "--max-rows",
      defaultValue = "40",
      description = "rows of the section table to print, 0..100000 (default: ${DEFAULT-VALUE})")
  int maxRows;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    SimulateRunner.Options o = new SimulateRunner.Options();
    o.model = model;
    o.seq = seq;
    o.layers = layers;
    o.batch = batch;
    o.globalBatch = globalBatch;
    o.sparsity = sparsity;
    o.pattern = pattern;
    o.recompute = recompute;
    o.chip = chip;
    o.chipFile = chipFile;
    o.baseline = baseline;
    o.gpuFile = gpuFile;
    o.chips = chips;
    o.out = out;
    o.maxRows = maxRows;
    SimulateOptions.validate(o, this::given);
    // the runner prints to streams; route them to this command's writers (tests capture those)
    ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
    ByteArrayOutputStream errBytes = new ByteArrayOutputStream();
    int code;
    try (PrintStream po = new PrintStream(outBytes, true, StandardCharsets.UTF_8);
        PrintStream pe = new PrintStream(errBytes, true, StandardCharsets.UTF_8)) {
      code = SimulateRunner.run(o, po, pe);
    }
    PrintWriter w = spec.commandLine().getOut();
    w.print(outBytes.toString(StandardCharsets.UTF_8));
    w.flush();
    String err = errBytes.toString(StandardCharsets.UTF_8).strip();
    if (code != 0) {
      // the runner reports value errors as "simulate: ..." with code 2; 2 is for syntax here
      String line = err.isEmpty() ? "simulation failed" : err.split("\\R", 2)[0];
      throw new IllegalArgumentException(line.replaceFirst("^simulate: ", ""));
    }
    if (!err.isEmpty()) {
      spec.commandLine().getErr().println(err);
      spec.commandLine().getErr().flush();
    }
    return 0;
  }

  private boolean given(String option) {
    return spec.commandLine().getParseResult().hasMatchedOption(option);
  }

  /** Standalone entry point (the main CLI registers this class as a subcommand). */
  public static void main(String[] args) {
    System.exit(
        SparseFlowCli.run(
            prepend("simulate", args),
            new PrintWriter(System.out, true),
            new PrintWriter(System.err, true)));
  }

  private static String[] prepend(String first, String[] rest) {
    String[] all = new String[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }
}
