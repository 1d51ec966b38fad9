package org.sparseflow.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.sparseflow.dataflow.api.SimulateRunner;
import org.sparseflow.dataflow.api.SimulationInputException;
import org.sparseflow.dataflow.api.SimulationOutputException;
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

  @Option(
      names = "--validate",
      description =
          "print the GPU model's error against published measured A100 throughputs"
              + " (Megatron-LM, SC21) instead of simulating")
  boolean validate;

  @Option(
      names = "--sensitivity",
      description = "print how the headline speedup moves with each documented assumption")
  boolean sensitivity;

  @Option(names = "--validation-file", description = "your own validation JSON (with --validate)")
  Path validationFile;

  @Option(
      names = "--gpu-cluster",
      defaultValue = "auto",
      description =
          "parallel GPU model for the baseline: auto | none | dgx-a100-80gb | a cluster JSON file"
              + " (default: ${DEFAULT-VALUE})")
  String gpuCluster;

  @Option(
      names = "--gpu-parallel",
      defaultValue = "auto",
      description =
          "GPU tensor,pipeline,data degrees[,micro-batch], e.g. 8,1,1; auto = fastest valid"
              + " (default: ${DEFAULT-VALUE})")
  String gpuParallel;

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
    o.validate = validate;
    o.sensitivity = sensitivity;
    o.validationFile = validationFile;
    o.gpuCluster = gpuCluster;
    o.gpuParallel = gpuParallel;
    SimulateOptions.validate(o, this::given);
    PrintWriter w = spec.commandLine().getOut();
    // the runner prints to a stream; route it to this command's writer (tests capture that)
    ByteArrayOutputStream outBytes = new ByteArrayOutputStream();
    try (PrintStream po = new PrintStream(outBytes, true, StandardCharsets.UTF_8)) {
      SimulateRunner.run(o, po);
    } catch (SimulationInputException e) {
      // a value or file the simulator rejected: exit 1 with the message, like every command
      throw new IllegalArgumentException(e.getMessage(), e);
    } catch (SimulationOutputException e) {
      throw new IllegalStateException(e.getMessage(), e);
    } finally {
      w.print(outBytes.toString(StandardCharsets.UTF_8));
      w.flush();
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
