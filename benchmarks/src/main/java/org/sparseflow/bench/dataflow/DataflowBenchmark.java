package org.sparseflow.bench.dataflow;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.dataflow.api.Comparison;
import org.sparseflow.dataflow.api.Simulate;
import org.sparseflow.dataflow.backend.DataflowBackend;
import org.sparseflow.dataflow.backend.DataflowSameDiffListener;
import org.sparseflow.dataflow.backend.OpRecorder;
import org.sparseflow.dataflow.backend.RecordedOp;
import org.sparseflow.dataflow.capture.GptGraphBuilder;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.capture.SameDiffCapture;
import org.sparseflow.dataflow.capture.TraceCapture;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.sim.DataflowSimulator;
import org.sparseflow.dataflow.sim.ExecutionMode;
import org.sparseflow.dataflow.sim.GpuSimulator;
import org.sparseflow.dataflow.sim.SimulationReport;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.train.GptModels;

/**
 * Calibration suite of the dataflow simulator ({@code sparseflow-benchmarks.jar dataflow
 * [--quick]}): the sparse GPT 13B vs dense A100 target, sensitivity to the assumptions, the inverse
 * calibration (which sparse efficiency would reproduce the paper's 4.5x), simulator speed, and a
 * recorded gpt-mini training step simulated end to end. Every simulated number is labelled
 * simulated=true; measured ones (wall times on this machine) measured=true.
 */
public final class DataflowBenchmark {
  static final double PAPER_SPEEDUP = 4.5;

  private DataflowBenchmark() {}

  public static void main(String[] args) throws Exception {
    boolean quick = List.of(args).contains("--quick");
    // the recording backend is chosen when ND4J initialises: ask for it before the first ND4J call
    if (System.getProperty("sparseflow.backend") == null) {
      System.setProperty("sparseflow.backend", "dataflow");
    }

    GptSpec target = GptSpec.preset("gpt3-13b").seq(2048).sparsity(0.875);
    // baseline: the validated parallel GPU model (docs/dataflow-model.md, GPU validation)
    Comparison c =
        Simulate.compare(
            target,
            ChipSpec.builtin("sn30"),
            GpuSpec.builtin("a100"),
            ClusterSpec.builtin("dgx-a100-80gb"),
            null,
            8);
    double dev = c.speedupVsBaseline() / PAPER_SPEEDUP - 1;
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow calibration model=gpt3-13b sparsity=0.875 chip=SN30 baseline=A100-80GB"
            + " chips=8 step_ms_dataflow=%.1f step_ms_kbk=%.1f step_ms_gpu_dense=%.1f"
            + " step_ms_gpu_parallel=%.1f"
            + " speedup_vs_baseline=%.3f paper=%.1f deviation=%.3f within_20pct=%s"
            + " flop_reduction=%.3f dataflow_over_kbk=%.3f gpu_dense_utilisation=%.3f"
            + " chip_utilisation=%.3f simulated=true%n",
        c.dataflow().stepMillis(),
        c.kernelByKernel().stepMillis(),
        c.gpuDense().stepMillis(),
        c.baselineStepSeconds() * 1e3,
        c.speedupVsBaseline(),
        PAPER_SPEEDUP,
        dev,
        Math.abs(dev) <= 0.2,
        c.flopReduction(),
        c.dataflowOverKernelByKernel(),
        c.gpuDense().utilisation(),
        c.dataflow().utilisation());

    // simulator speed: one full 13B training step (graph build + sectioning + timing), measured
    for (int rep = 0; rep < 3; rep++) {
      long t0 = System.nanoTime();
      OpGraph g = Simulate.graph(target, 8);
      SimulationReport r =
          new DataflowSimulator(ChipSpec.builtin("sn30")).simulate(g, ExecutionMode.DATAFLOW, 2048);
      double s = (System.nanoTime() - t0) / 1e9;
      System.out.printf(
          Locale.ROOT,
          "RESULT dataflow simulator-speed model=gpt3-13b ops=%d sections=%d rep=%d wall_s=%.3f"
              + " measured=true%n",
          g.ops().size(),
          r.sections().size(),
          rep,
          s);
    }

    // sensitivity to the key unknown (unstructured sparse efficiency on the chip)
    for (double eff : new double[] {1.0 / 6, 0.25, 1.0 / 3, 0.5, 2.0 / 3}) {
      Comparison ce =
          Simulate.compare(
              target, chipWithSparseEfficiency("sn30", eff), GpuSpec.builtin("a100"), 8);
      System.out.printf(
          Locale.ROOT,
          "RESULT dataflow sensitivity sparse_efficiency=%.4f speedup_vs_baseline=%.3f"
              + " step_ms_dataflow=%.1f simulated=true%n",
          eff,
          ce.speedupVsBaseline(),
          ce.dataflow().stepMillis());
    }
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow inverse-calibration paper_speedup=%.1f sparse_efficiency_needed=%.4f"
            + " shipped=%.4f simulated=true%n",
        PAPER_SPEEDUP,
        inverseCalibrate(target),
        ChipSpec.builtin("sn30").sparseEfficiency("unstructured"));

    if (!quick) {
      for (String chip : List.of("sn10", "sn30", "sn40l")) {
        for (String gpu : List.of("a100-40gb", "a100-80gb", "h100")) {
          Comparison x = Simulate.compare(target, ChipSpec.builtin(chip), GpuSpec.builtin(gpu), 8);
          System.out.printf(
              Locale.ROOT,
              "RESULT dataflow matrix chip=%s baseline=%s speedup_vs_baseline=%.3f"
                  + " dataflow_over_kbk=%.3f simulated=true%n",
              x.dataflow().target(),
              x.gpuDense().target(),
              x.speedupVsBaseline(),
              x.dataflowOverKernelByKernel());
        }
      }
      for (double sp : new double[] {0.0, 0.5, 0.75, 0.875, 0.9375}) {
        for (String pat : List.of("unstructured", "block16", "2:4")) {
          if (pat.equals("2:4") && sp != 0.5) {
            continue;
          }
          Comparison x =
              Simulate.compare(
                  target.copy().sparsity(sp).pattern(pat),
                  ChipSpec.builtin("sn30"),
                  GpuSpec.builtin("a100"),
                  8);
          System.out.printf(
              Locale.ROOT,
              "RESULT dataflow sparsity-sweep sparsity=%.4f pattern=%s step_ms_dataflow=%.1f"
                  + " step_ms_gpu_sparse=%.1f speedup_vs_baseline=%.3f simulated=true%n",
              sp,
              pat,
              x.dataflow().stepMillis(),
              x.gpuSparse().stepMillis(),
              x.speedupVsBaseline());
        }
      }
      for (String rc : GptSpec.RECOMPUTE) {
        Comparison x =
            Simulate.compare(
                target.copy().recompute(rc), ChipSpec.builtin("sn30"), GpuSpec.builtin("a100"), 8);
        System.out.printf(
            Locale.ROOT,
            "RESULT dataflow recompute policy=%s speedup_vs_baseline=%.3f step_ms_dataflow=%.1f"
                + " step_ms_gpu_dense=%.1f simulated=true%n",
            rc,
            x.speedupVsBaseline(),
            x.dataflow().stepMillis(),
            x.gpuDense().stepMillis());
      }
    }

    recordedGptMini();
  }

  /**
   * A real gpt-mini (reference SameDiff GPT) training step recorded by the dataflow backend and
   * simulated.
   */
  static void recordedGptMini() {
    GptConfig cfg = GptModels.config("gpt-mini", 96, 64, 1);
    SameDiff sd = SameDiffGpt.build(cfg, 1e-3);
    String backend = Nd4j.getBackend().getClass().getName();
    // static capture of the whole training step (no execution)
    OpGraph stat = SameDiffCapture.captureTraining(sd, 8);
    SimulationReport rs =
        new DataflowSimulator(ChipSpec.builtin("sn30"))
            .simulate(stat, ExecutionMode.DATAFLOW, 8L * 64);
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow gpt-mini-static-capture ops=%d step_ms=%.4f chip=SN30 simulated=true%n",
        stat.ops().size(),
        rs.stepMillis());
    if (!backend.equals(DataflowBackend.class.getName())) {
      System.out.println("RESULT dataflow gpt-mini-trace skipped=true reason=backend_" + backend);
      return;
    }
    sd.addListeners(new DataflowSameDiffListener());
    Nd4j.getRandom().setSeed(3);
    INDArray ids =
        Nd4j.rand(DataType.FLOAT, 8, 64).muli(96).castTo(DataType.INT32).castTo(DataType.FLOAT);
    INDArray labels =
        Nd4j.rand(DataType.FLOAT, 8, 64).muli(96).castTo(DataType.INT32).castTo(DataType.FLOAT);
    DataSet ds = new DataSet(ids, labels);
    OpRecorder rec = OpRecorder.global();
    int first = rec.nextIteration();
    long t0 = System.nanoTime();
    sd.fit(ds);
    sd.fit(ds);
    double fitS = (System.nanoTime() - t0) / 1e9;
    List<Integer> its = rec.iterations();
    List<RecordedOp> ops = rec.iteration(its.get(its.size() - 2));
    if (ops.isEmpty()) {
      ops = rec.iteration(first);
    }
    OpGraph g = TraceCapture.fromRecords("gpt-mini-trace", ops);
    SimulationReport df =
        new DataflowSimulator(ChipSpec.builtin("sn30"))
            .simulate(g, ExecutionMode.DATAFLOW, 8L * 64);
    SimulationReport kbk =
        new DataflowSimulator(ChipSpec.builtin("sn30"))
            .simulate(g, ExecutionMode.KERNEL_BY_KERNEL, 8L * 64);
    SimulationReport gpu = new GpuSimulator(GpuSpec.builtin("a100")).simulate(g);
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow gpt-mini-trace recorded_ops=%d graph_ops=%d fit_s_two_steps=%.3f"
            + " measured=true%n",
        ops.size(),
        g.ops().size(),
        fitS);
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow gpt-mini mode=dataflow chip=SN30 step_ms=%.4f simulated=true%n",
        df.stepMillis());
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow gpt-mini mode=kernel-by-kernel chip=SN30 step_ms=%.4f simulated=true%n",
        kbk.stepMillis());
    System.out.printf(
        Locale.ROOT,
        "RESULT dataflow gpt-mini baseline=A100-80GB step_ms=%.4f simulated=true%n",
        gpu.stepMillis());
  }

  static ChipSpec chipWithSparseEfficiency(String id, double eff) throws IOException {
    String json;
    try (InputStream in =
        ChipSpec.class.getResourceAsStream("/org/sparseflow/dataflow/hw/" + id + ".json")) {
      json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    json =
        json.replaceFirst(
            "\"unstructured\": \\{\"value\": [0-9.]+", "\"unstructured\": {\"value\": " + eff);
    return ChipSpec.fromJson(id + " (sparse efficiency " + eff + ")", json);
  }

  /**
   * Bisection on the chip's unstructured sparse efficiency so that the simulated speedup equals the
   * paper's.
   */
  static double inverseCalibrate(GptSpec target) throws IOException {
    GpuSpec a100 = GpuSpec.builtin("a100");
    OpGraph sparse = GptGraphBuilder.build(target, Simulate.microBatches(target, 8));
    double gpu =
        new GpuSimulator(a100)
            .simulate(
                GptGraphBuilder.build(target.copy().sparsity(0), Simulate.microBatches(target, 8)))
            .stepSeconds();
    double lo = 0.01, hi = ChipSpec.builtin("sn30").systolicEfficiency();
    for (int i = 0; i < 30; i++) {
      double mid = 0.5 * (lo + hi);
      double s =
          gpu
              / new DataflowSimulator(chipWithSparseEfficiency("sn30", mid))
                  .simulate(sparse, ExecutionMode.DATAFLOW, 2048)
                  .stepSeconds();
      if (s < PAPER_SPEEDUP) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return 0.5 * (lo + hi);
  }
}
