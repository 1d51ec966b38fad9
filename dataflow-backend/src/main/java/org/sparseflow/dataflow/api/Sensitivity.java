package org.sparseflow.dataflow.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;

/**
 * How the headline speedup (sparse model on the chip over the dense model on GPUs) moves when one
 * documented assumption changes at a time: sparsity pattern, the chip's gather (unstructured
 * sparse) efficiency, batch, chip count, and the GPU's GEMM efficiency. SIMULATED.
 */
public final class Sensitivity {
  private Sensitivity() {}

  /**
   * One what-if.
   *
   * @param factor the assumption changed
   * @param value its value in this row
   * @param speedup baseline step over dataflow step
   * @param dataflowStepSeconds sparse step on the chip, gradient all-reduce included
   * @param baselineStepSeconds dense step on the GPUs
   * @param baselineConfig the GPU parallel configuration used
   */
  public record Row(
      String factor,
      String value,
      double speedup,
      double dataflowStepSeconds,
      double baselineStepSeconds,
      String baselineConfig) {
    public String resultLine() {
      return String.format(
          Locale.ROOT,
          "RESULT sensitivity factor=%s value=%s speedup_vs_baseline=%.3f step_s_dataflow=%.2f"
              + " step_s_baseline=%.2f baseline_config=%s simulated=true",
          factor,
          value,
          speedup,
          dataflowStepSeconds,
          baselineStepSeconds,
          baselineConfig.replace(' ', ','));
    }
  }

  /** The sensitivity rows around {@code base} (the first row is the unchanged headline). */
  public static List<Row> headline(
      GptSpec base, ChipSpec chip, GpuSpec gpu, ClusterSpec cluster, int chips) {
    if (cluster == null) {
      throw new IllegalArgumentException(
          "the sensitivity table needs a validated GPU cluster model; none for " + gpu.name());
    }
    List<Row> rows = new ArrayList<>();
    rows.add(row("headline", "as shipped", base, chip, gpu, cluster, chips));
    rows.add(
        row("pattern", "block16@0.875", base.copy().pattern("block16"), chip, gpu, cluster, chips));
    rows.add(
        row(
            "pattern",
            "2:4@0.5",
            base.copy().pattern("2:4").sparsity(0.5),
            chip,
            gpu,
            cluster,
            chips));
    rows.add(
        row("pattern", "unstructured@0.75", base.copy().sparsity(0.75), chip, gpu, cluster, chips));
    rows.add(
        row(
            "pattern",
            "unstructured@0.9375",
            base.copy().sparsity(0.9375),
            chip,
            gpu,
            cluster,
            chips));
    for (double eff : new double[] {0.25, 1.0 / 3, 0.5, 2.0 / 3}) {
      rows.add(
          row(
              "gather_efficiency",
              String.format(Locale.ROOT, "%.4f", eff),
              base,
              chip.withUnstructuredSparseEfficiency(eff),
              gpu,
              cluster,
              chips));
    }
    for (int gb : new int[] {256, 512, 2048}) {
      rows.add(
          row(
              "global_batch",
              Integer.toString(gb),
              base.copy().globalBatch(gb),
              chip,
              gpu,
              cluster,
              chips));
    }
    for (int n : new int[] {16, 32, 64}) {
      rows.add(row("chips", Integer.toString(n), base, chip, gpu, cluster, n));
    }
    double mamf = cluster.achievableMatmulFlops() / gpu.peakFlops();
    rows.add(
        row(
            "gpu_gemm_efficiency",
            String.format(Locale.ROOT, "%.3f(MAMF,unfitted)", mamf),
            base,
            chip,
            gpu,
            cluster.withTrainingGemmEfficiency(mamf),
            chips));
    rows.add(row("recompute", "full", base.copy().recompute("full"), chip, gpu, cluster, chips));
    return rows;
  }

  private static Row row(
      String factor,
      String value,
      GptSpec spec,
      ChipSpec chip,
      GpuSpec gpu,
      ClusterSpec cluster,
      int chips) {
    Comparison c = Simulate.compare(spec.validate(), chip, gpu, cluster, null, chips);
    return new Row(
        factor,
        value,
        c.speedupVsBaseline(),
        c.dataflowStepSeconds(),
        c.baselineStepSeconds(),
        c.gpuCluster().config().toString());
  }
}
