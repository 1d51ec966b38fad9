package org.sparseflow.train;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.api.Comparison;
import org.sparseflow.dataflow.api.Simulate;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.hw.Hardware;
import org.sparseflow.dataflow.sim.SimulationReport;
import org.sparseflow.examples.gpt.GptConfig;

/**
 * Bridges {@code compare} to the dataflow simulator (org.sparseflow.dataflow): one training step of
 * each trained model, at its final density, on a dataflow chip (dataflow and kernel-by-kernel
 * modes) and on the GPU baseline running the dense model. Every number printed here is SIMULATED.
 */
public final class Simulations {

  /**
   * Default hardware: the chip generation of the SambaNova sparse-GPT paper and its A100 baseline.
   */
  public static final String DEFAULT_CHIP = "sn30";

  public static final String DEFAULT_GPU = "a100-80gb";

  private Simulations() {}

  /** The simulator's description of a reference GPT at a given sparsity. */
  public static GptSpec spec(GptConfig g, int batch, double sparsity, String name) {
    return new GptSpec()
        .name(name)
        .layers(g.layers())
        .dModel(g.dModel())
        .heads(g.heads())
        .ffn(4 * g.dModel())
        .seq(g.context())
        .vocab(g.vocab())
        .batch(batch)
        .globalBatch(batch)
        .sparsity(sparsity)
        .validate();
  }

  /** Simulates one model; {@code sparsity} = 1 - density of its sparse linear layers. */
  public static Comparison simulate(
      GptConfig g, int batch, double sparsity, String name, String chip, String gpu) {
    return Simulate.compare(
        spec(g, batch, sparsity, name), Hardware.chip(chip), Hardware.gpu(gpu), 1);
  }

  /**
   * Simulates the final model of each compared run and prints a SIMULATED table; returns the lines.
   */
  // qualified: the imported Comparison is the simulator's (dataflow.api)
  public static List<String> compare(
      List<org.sparseflow.train.Comparison.Row> rows,
      PrintWriter out,
      TrainConfig config,
      int vocab) {
    List<String> lines = new ArrayList<>();
    GptConfig g = GptFlops.architecture(config, vocab);
    if (g == null) {
      String l =
          "simulation: skipped; the simulator models the reference GPTs only (model '"
              + config.model
              + "')";
      out.println(l);
      lines.add(l);
      return lines;
    }
    lines.add(
        String.format(
            Locale.ROOT,
            "SIMULATED one training step of %s (batch %d x %d tokens): %s dataflow chip vs %s GPU"
                + " running the dense model",
            config.model,
            config.batchSize,
            config.contextLength,
            DEFAULT_CHIP,
            DEFAULT_GPU));
    String fmt = "%-10s %8s %16s %20s %14s %16s %12s";
    lines.add(
        String.format(
            Locale.ROOT,
            fmt,
            "model",
            "density",
            "chip dataflow ms",
            "chip kernel-by-kernel",
            "GPU dense ms",
            "GPU this model ms",
            "speedup"));
    for (var row : rows) {
      double density = Math.max(0, Math.min(1, row.result().density()));
      Comparison c =
          simulate(g, config.batchSize, 1.0 - density, row.name(), DEFAULT_CHIP, DEFAULT_GPU);
      lines.add(
          String.format(
              Locale.ROOT,
              fmt,
              row.name(),
              String.format(Locale.ROOT, "%.3f", density),
              ms(c.dataflow()),
              ms(c.kernelByKernel()) + " ms",
              ms(c.gpuDense()),
              ms(c.gpuSparse()),
              String.format(Locale.ROOT, "%.2fx", c.speedupVsBaseline())));
    }
    lines.add(
        "("
            + SimulationReport.SIMULATED
            + ": modelled by the dataflow-backend simulator from public chip/GPU specs, not"
            + " measured; speedup = GPU dense step time / chip dataflow step time)");
    lines.forEach(out::println);
    out.flush();
    return lines;
  }

  private static String ms(SimulationReport r) {
    return String.format(Locale.ROOT, "%.4f", r.stepMillis());
  }
}
