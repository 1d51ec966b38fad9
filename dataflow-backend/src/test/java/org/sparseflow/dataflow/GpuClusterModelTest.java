package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.dataflow.api.Sensitivity;
import org.sparseflow.dataflow.api.SimulateRunner;
import org.sparseflow.dataflow.api.SimulationInputException;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.cluster.GpuTrainingModel;
import org.sparseflow.dataflow.cluster.GpuTrainingResult;
import org.sparseflow.dataflow.cluster.GpuValidation;
import org.sparseflow.dataflow.cluster.ParallelConfig;
import org.sparseflow.dataflow.cluster.TransformerShape;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.sim.ChipCollectives;

class GpuClusterModelTest {
  private static final ClusterSpec DGX = ClusterSpec.builtin("a100");
  private static final TransformerShape GPT13B = TransformerShape.of(GptSpec.preset("gpt3-13b"));

  static String resource(String path) throws IOException {
    try (InputStream in = GpuClusterModelTest.class.getResourceAsStream(path)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static ParallelConfig cfg(int t, int p, int d, int mb, String rc) {
    return new ParallelConfig(t, p, d, mb, 1024, 1, rc, true);
  }

  private static void assertMessage(Executable run, String... parts) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, run::run);
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + p + "' missing from: " + e.getMessage());
    }
  }

  @FunctionalInterface
  interface Executable {
    void run();
  }

  @Test
  void validationAgainstMegatronMeetsTheTargetsOnAllAndOnTheHeldOutSubset() {
    List<GpuValidation.Row> rows = GpuValidation.builtin().run(DGX);
    GpuValidation.Summary all = GpuValidation.summary(rows);
    GpuValidation.Summary held = GpuValidation.summary(rows, false);
    assertTrue(all.configs() >= 6);
    assertTrue(held.configs() >= 6, "held-out configurations: " + held.configs());
    assertTrue(all.meanAbsErrPct() <= 10, "mean " + all.meanAbsErrPct());
    assertTrue(all.maxAbsErrPct() <= 20, "max " + all.maxAbsErrPct());
    assertTrue(held.meanAbsErrPct() <= 10, "held-out mean " + held.meanAbsErrPct());
    for (GpuValidation.Row r : rows) {
      assertTrue(r.entry().source().contains("2104.04473"), r.entry().source());
    }
  }

  @Test
  void shippedGemmEfficiencyIsTheCalibrationOptimumAndBelowTheMicrobenchmark() {
    double fitted = GpuValidation.builtin().fitTrainingGemmEfficiency(DGX);
    assertEquals(DGX.trainingGemmEfficiency(), fitted, 1e-9, "re-fit on calibration entries");
    assertTrue(DGX.trainingGemmEfficiency() * 312e12 <= DGX.achievableMatmulFlops());
  }

  @Test
  void iterationAddsUpAndPipelineBubbleFollowsOneFOneB() {
    GpuTrainingResult r = new GpuTrainingModel(DGX).simulate(GPT13B, cfg(2, 4, 1, 1, "full"));
    double expectBubble = 3 * r.stageMicroBatchSeconds();
    assertEquals(expectBubble, r.bubbleSeconds(), 1e-9);
    double sum =
        r.config().microBatches() * r.stageMicroBatchSeconds()
            + r.bubbleSeconds()
            + r.dataParallelSeconds()
            + r.optimizerSeconds();
    assertEquals(sum, r.iterationSeconds(), 1e-9);
    assertTrue(r.tensorParallelSeconds() > 0 && r.pipelineP2pSeconds() > 0);
    GpuTrainingResult none = new GpuTrainingModel(DGX).simulate(GPT13B, cfg(8, 1, 1, 1, "none"));
    GpuTrainingResult full = new GpuTrainingModel(DGX).simulate(GPT13B, cfg(8, 1, 1, 1, "full"));
    assertTrue(full.iterationSeconds() > none.iterationSeconds(), "recompute costs time");
    assertTrue(full.memoryBytesPerGpu() < none.memoryBytesPerGpu(), "and saves memory");
  }

  @Test
  void parallelDegreesThatDoNotDivideTheModelOrTheGpusAreRejected() {
    GpuTrainingModel m = new GpuTrainingModel(DGX);
    assertMessage(() -> m.simulate(GPT13B, cfg(3, 1, 1, 1, "full")), "3", "40 attention heads");
    assertMessage(() -> m.simulate(GPT13B, cfg(1, 3, 1, 1, "full")), "pipeline", "40 layers");
    assertMessage(
        () -> cfg(2, 2, 2, 1, "full").validate(GPT13B, 6), "= 8 GPUs", "6 GPUs were given");
    assertMessage(
        () -> new ParallelConfig(8, 1, 3, 1, 1024, 1, "full", true).validate(GPT13B, 24),
        "global batch 1024",
        "data parallel degree 3");
    assertMessage(
        () -> new ParallelConfig(2, 2, 2, 1, 1024, 1, "sometimes", true).validate(GPT13B, 8),
        "sometimes",
        "none, attention, full");
    assertMessage(
        () -> new ParallelConfig(8, 1, 1, 1, 1024, 2, "full", true).validate(GPT13B, 8),
        "interleaved");
    assertMessage(() -> cfg(0, 8, 1, 1, "full").validate(GPT13B, 8), "tensor", ">= 1");
  }

  @Test
  void impossibleMemoryFootprintIsRejectedWithTheNumbers() {
    assertMessage(
        () -> new GpuTrainingModel(DGX).simulate(GPT13B, cfg(1, 1, 1, 1, "none")),
        "impossible memory footprint",
        "GB per GPU",
        "80 GB");
  }

  @Test
  void simulateOptionsForTheGpuSideAreValidated() {
    SimulateRunner.Options o = new SimulateRunner.Options();
    PrintStream sink = new PrintStream(new ByteArrayOutputStream());
    o.gpuParallel = "8,1";
    assertMessage(() -> SimulateRunner.run(o, sink), "--gpu-parallel '8,1'", "t,p,d");
    o.gpuParallel = "8,x,1";
    assertMessage(() -> SimulateRunner.run(o, sink), "'x' is not a whole number");
    o.gpuParallel = "4,1,1";
    assertMessage(() -> SimulateRunner.run(o, sink), "= 4 does not equal --chips 8");
    o.gpuParallel = "3,1,1";
    o.chips = 3;
    assertMessage(() -> SimulateRunner.run(o, sink), "40 attention heads");
    o.gpuParallel = "auto";
    o.chips = 8;
    o.gpuCluster = "tpu-pod";
    SimulationInputException e =
        assertThrows(SimulationInputException.class, () -> SimulateRunner.run(o, sink));
    assertTrue(e.getMessage().contains("tpu-pod"), e.getMessage());
  }

  @Test
  void validationFileIsReadStrictly() throws IOException {
    String json = resource(GpuValidation.BUILTIN);
    assertMessage(
        () -> GpuValidation.fromJson("v.json", json.replace("\"role\":", "\"rolle\":")),
        "v.json",
        "unknown field 'rolle'");
    assertMessage(
        () ->
            GpuValidation.fromJson(
                "v.json", json.replaceFirst("\"microBatch\": 16,", "\"microBatch\": \"16\",")),
        "gpt-1.7b",
        "'microBatch' must be an integer");
    assertMessage(
        () -> GpuValidation.fromJson("v.json", json.replaceFirst("\"gpus\": 64", "\"gpus\": 65")),
        "gpt-3.6b",
        "gpus 65 is not a multiple of tensorParallel 2");
    assertMessage(
        () ->
            GpuValidation.fromJson(
                "v.json", json.replaceFirst("\"tensorParallel\": 2", "\"tensorParallel\": 5")),
        "gpt-3.6b");
    assertMessage(
        () -> GpuValidation.fromJson("v.json", json.replaceFirst("\"recompute\": \"full\",", "")),
        "gpt-1.7b",
        "missing required field 'recompute'");
    assertMessage(
        () -> GpuValidation.fromJson("v.json", json.replace("\"heldout\"", "\"maybe\"")),
        "role 'maybe'");
  }

  @Test
  void validationOptionsAndDataParallelImplementationAreChecked(@TempDir Path dir)
      throws IOException {
    String json = resource(GpuValidation.BUILTIN);
    assertMessage(
        () -> GpuValidation.fromJson("v.json", json.replaceFirst("\"torch\"", "\"horovod\"")),
        "gpt-1.7b",
        "dataParallelImpl 'horovod'");
    SimulateRunner.Options o = new SimulateRunner.Options();
    o.validate = true;
    o.validationFile = dir.resolve("missing.json");
    SimulationInputException e =
        assertThrows(
            SimulationInputException.class,
            () -> SimulateRunner.run(o, new PrintStream(new ByteArrayOutputStream())));
    assertTrue(e.getMessage().contains("missing.json"), e.getMessage());
    Path custom = dir.resolve("custom.json");
    Files.writeString(custom, json);
    o.validationFile = custom;
    SimulateRunner.Result r = SimulateRunner.run(o, new PrintStream(new ByteArrayOutputStream()));
    assertEquals(10, r.validation().size());
    assertTrue(
        r.text()
            .matches(
                "(?s).*RESULT validation gpu mean_abs_err_pct=[0-9.]+ max_abs_err_pct=[0-9.]+"
                    + " configs=10.*"),
        r.text());
  }

  @Test
  void everyClusterValueHasASource() {
    assertTrue(DGX.sources().size() >= 12, DGX.sources().keySet().toString());
    DGX.sources().values().forEach(v -> assertFalse(v.isBlank()));
    assertTrue(DGX.sources().get("trainingGemmEfficiency").startsWith("FITTED"));
  }

  @Test
  void clusterFileIsValidated() throws IOException {
    String json = resource("/org/sparseflow/dataflow/hw/dgx-a100-80gb.json");
    assertEquals(DGX.name(), ClusterSpec.fromJson("c.json", json).name());
    assertMessage(
        () -> ClusterSpec.fromJson("c.json", json.replace("\"gpusPerNode\"", "\"gpusPerNod\"")),
        "c.json",
        "gpusPerNod");
    assertMessage(
        () ->
            ClusterSpec.fromJson(
                "c.json",
                json.replace(
                    "\"trainingGemmEfficiency\": {\"value\": 0.755",
                    "\"trainingGemmEfficiency\": {\"value\": 0.95")),
        "contradictory",
        "achievableMatmulTflops");
    assertMessage(
        () -> ClusterSpec.fromJson("c.json", json.replace("\"a100-80gb\"", "\"v100\"")),
        "field 'gpu'",
        "v100");
  }

  @Test
  void chipInterconnectFieldsGoTogetherAndAreNeededForSeveralChips() throws IOException {
    String json = HardwareSpecTest.resource("sn30");
    String partial = json.replaceFirst("\"chipLinkBandwidthGBs\": \\{[^}]*\\},?", "");
    assertMessage(() -> ChipSpec.fromJson("chip.json", partial), "chip.json", "give all four");
    String none =
        json.replaceAll(
            ",\\s*\"(chipsPerNode|chipLinkBandwidthGBs|interNodeBandwidthGBs|collectiveLatencyUs)\""
                + ": \\{[^}]*\\}",
            "");
    ChipSpec bare = ChipSpec.fromJson("chip.json", none);
    assertFalse(bare.hasInterconnect());
    assertMessage(
        () -> ChipCollectives.allReduceSeconds(bare, 1e9, 8), "no interconnect fields", "8 chips");
  }

  @Test
  void sensitivityRowsChangeOneAssumptionAndGatherEfficiencyOnlyHelps() {
    GptSpec mini = GptSpec.preset("gpt-mini").sparsity(0.875);
    List<Sensitivity.Row> rows =
        Sensitivity.headline(mini, ChipSpec.builtin("sn30"), DGX.gpu(), DGX, 8);
    assertEquals("headline", rows.get(0).factor());
    double prev = rows.get(0).speedup();
    for (Sensitivity.Row r : rows) {
      assertTrue(r.resultLine().startsWith("RESULT sensitivity factor="), r.resultLine());
      if (r.factor().equals("gather_efficiency")) {
        assertTrue(r.speedup() >= prev * (1 - 1e-12), r.resultLine());
        assertEquals(rows.get(0).baselineStepSeconds(), r.baselineStepSeconds(), 1e-12);
        prev = r.speedup();
      }
    }
    assertThrows(
        IllegalArgumentException.class,
        () -> ChipSpec.builtin("sn30").withUnstructuredSparseEfficiency(0.9));
  }
}
