package org.sparseflow.dataflow.report;

import java.util.List;
import java.util.Locale;
import org.sparseflow.dataflow.cluster.GpuTrainingResult;
import org.sparseflow.dataflow.cluster.GpuValidation;
import org.sparseflow.dataflow.hw.ClusterSpec;

/** Text for the parallel GPU model: one iteration's breakdown and the validation table. */
public final class ClusterReport {
  private ClusterReport() {}

  /** One line per iteration with its breakdown. */
  public static String summary(GpuTrainingResult r) {
    return String.format(
        Locale.ROOT,
        "SIMULATED %-10s parallel-gpu model (%s, %d GPUs): step=%.1f ms = %d micro-batches x %.1f"
            + " ms (GEMM %.1f, elementwise %.1f, tensor-parallel %.1f, pipeline p2p %.1f) + bubble"
            + " %.1f + data-parallel %.1f + optimizer %.1f; %.1f GB per GPU; %.1f TFLOP/s per GPU"
            + " (Megatron accounting), hardware utilisation %.1f%%, model FLOPs utilisation"
            + " %.1f%%%n",
        r.cluster(),
        r.config(),
        r.gpus(),
        r.iterationSeconds() * 1e3,
        r.config().microBatches(),
        r.stageMicroBatchSeconds() * 1e3,
        r.gemmSeconds() * 1e3,
        r.elementwiseSeconds() * 1e3,
        r.tensorParallelSeconds() * 1e3,
        r.pipelineP2pSeconds() * 1e3,
        r.bubbleSeconds() * 1e3,
        r.dataParallelSeconds() * 1e3,
        r.optimizerSeconds() * 1e3,
        r.memoryBytesPerGpu() / 1e9,
        r.megatronTflopsPerGpu(),
        100 * r.hardwareUtilisation(),
        100 * r.modelFlopsUtilisation());
  }

  /** The validation table, the RESULT summary line and the held-out line. */
  public static String validation(ClusterSpec cluster, List<GpuValidation.Row> rows) {
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "SIMULATED GPU model validation on %s (trainingGemmEfficiency %.3f, the one fitted"
                + " parameter; role C = calibration, H = held out)%n",
            cluster.name(),
            cluster.trainingGemmEfficiency()));
    for (GpuValidation.Row r : rows) {
      b.append(
          String.format(
              Locale.ROOT,
              "validation %-12s role=%s t=%d p=%d d=%d mb=%d v=%d B=%d gpus=%d"
                  + " published_tflops=%.0f simulated_tflops=%.1f err_pct=%+.1f%n",
              r.entry().shape().name(),
              r.entry().calibration() ? "C" : "H",
              r.entry().config().tensor(),
              r.entry().config().pipeline(),
              r.entry().config().data(),
              r.entry().config().microBatch(),
              r.entry().config().virtualStages(),
              r.entry().config().globalBatch(),
              r.entry().config().gpus(),
              r.entry().publishedTflopsPerGpu(),
              r.simulatedTflopsPerGpu(),
              r.errorPct()));
    }
    GpuValidation.Summary all = GpuValidation.summary(rows);
    GpuValidation.Summary held = GpuValidation.summary(rows, false);
    GpuValidation.Summary cal = GpuValidation.summary(rows, true);
    b.append(
        String.format(
            Locale.ROOT,
            "RESULT validation gpu mean_abs_err_pct=%.2f max_abs_err_pct=%.2f configs=%d"
                + " simulated=true%n",
            all.meanAbsErrPct(),
            all.maxAbsErrPct(),
            all.configs()));
    b.append(
        String.format(
            Locale.ROOT,
            "RESULT validation gpu-heldout mean_abs_err_pct=%.2f max_abs_err_pct=%.2f configs=%d"
                + " simulated=true%n",
            held.meanAbsErrPct(),
            held.maxAbsErrPct(),
            held.configs()));
    b.append(
        String.format(
            Locale.ROOT,
            "RESULT validation gpu-calibration mean_abs_err_pct=%.2f max_abs_err_pct=%.2f"
                + " configs=%d simulated=true%n",
            cal.meanAbsErrPct(),
            cal.maxAbsErrPct(),
            cal.configs()));
    return b.toString();
  }
}
