package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.dataflow.api.Comparison;
import org.sparseflow.dataflow.api.Simulate;
import org.sparseflow.dataflow.api.SimulateRunner;
import org.sparseflow.dataflow.api.SimulationInputException;
import org.sparseflow.dataflow.api.SimulationOutputException;
import org.sparseflow.dataflow.capture.GptSpec;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.report.ChromeTrace;
import org.sparseflow.dataflow.report.ReportJson;
import org.sparseflow.dataflow.sim.SimulationReport;

class SimulationTest {

  @Test
  void gpt13bSparseOnSn30BeatsDenseA100AndDataflowBeatsKernelByKernel() {
    Comparison c =
        Simulate.compare(
            GptSpec.preset("gpt3-13b").sparsity(0.875),
            ChipSpec.builtin("sn30"),
            GpuSpec.builtin("a100"),
            ClusterSpec.builtin("dgx-a100-80gb"),
            null,
            8);
    assertEquals(128, c.dataflow().microBatches(), "1024 sequences over 8 chips");
    assertNotNull(c.gpuCluster());
    assertEquals(8, c.gpuCluster().gpus());
    assertTrue(
        c.speedupVsBaseline() >= 4.05 && c.speedupVsBaseline() <= 4.95,
        "headline against the validated GPU model left 4.5x +- 10% (issue 22 target); if a"
            + " documented parameter changed, update docs/dataflow-model.md section 6: "
            + c.speedupVsBaseline());
    assertTrue(c.chipCommSeconds() > 0 && c.chipCommSeconds() < 0.05 * c.dataflowStepSeconds());
    assertTrue(
        c.flopReduction() > 4.5 && c.flopReduction() < 5.5,
        "87.5% sparse linears cut step FLOPs ~5x: " + c.flopReduction());
    assertTrue(
        c.dataflowOverKernelByKernel() > 1.5,
        "fusion + pipelining must pay off on a DDR chip: " + c.dataflowOverKernelByKernel());
    assertTrue(c.speedupVsBaseline() > 1.0);
    assertTrue(
        c.gpuDense().utilisation() > 0.3 && c.gpuDense().utilisation() < 0.9,
        "dense GPU utilisation " + c.gpuDense().utilisation());
    assertTrue(
        c.gpuDense().notes().stream().anyMatch(n -> n.contains("shard")),
        "13B does not fit one A100: the report must say so");
  }

  @Test
  void reportJsonRoundTripsAndTraceIsValid(@TempDir Path dir) throws Exception {
    Comparison c =
        Simulate.compare(
            GptSpec.preset("gpt-mini").sparsity(0.5),
            ChipSpec.builtin("sn10"),
            GpuSpec.builtin("h100"),
            1);
    SimulationReport r = c.dataflow();
    SimulationReport back = ReportJson.fromJson(ReportJson.toJson(r));
    assertEquals(r, back);
    JsonNode trace =
        new ObjectMapper().readTree(ChromeTrace.toJson(List.of(c.dataflow(), c.gpuDense())));
    long complete = 0;
    for (JsonNode e : trace.get("traceEvents")) {
      if (e.get("ph").asText().equals("X")) {
        complete++;
        assertTrue(e.get("dur").asDouble() >= 0 && e.get("ts").asDouble() >= 0);
      }
    }
    assertEquals(
        r.sections().size() + r.kernels().size() + c.gpuDense().sections().size(), complete);
    JsonNode all = new ObjectMapper().readTree(ReportJson.toJson(c));
    assertEquals("SIMULATED", all.get("label").asText());
    assertEquals(c.speedupVsBaseline(), all.get("speedupVsBaseline").asDouble(), 1e-12);
  }

  @Test
  void simulateCommandPrintsResultLinesAndWritesFiles(@TempDir Path dir) throws Exception {
    SimulateRunner.Options o = new SimulateRunner.Options();
    o.model = "gpt-mini";
    o.sparsity = 0.75;
    o.pattern = "block16";
    o.chip = "sn30";
    o.baseline = "a100";
    o.out = dir;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    SimulateRunner.Result res =
        SimulateRunner.run(o, new PrintStream(out, true, StandardCharsets.UTF_8));
    String text = out.toString(StandardCharsets.UTF_8);
    assertTrue(text.startsWith(res.text()), "the result carries what was printed");
    assertNotNull(res.comparison().gpuCluster(), "a100 has a validated cluster model");
    assertTrue(text.contains("SIMULATED"));
    assertTrue(
        text.matches("(?s).*RESULT dataflow gpt-mini mode=dataflow chip=SN30 step_ms=[0-9.]+.*"),
        text);
    assertTrue(
        text.matches(
            "(?s).*RESULT dataflow gpt-mini mode=kernel-by-kernel chip=SN30 step_ms=[0-9.]+.*"),
        text);
    assertTrue(text.matches("(?s).*RESULT dataflow gpt-mini speedup_vs_baseline=[0-9.]+.*"), text);
    assertTrue(Files.size(dir.resolve("report.json")) > 100);
    assertTrue(Files.size(dir.resolve("trace.json")) > 100);
    byte[] png = Files.readAllBytes(dir.resolve("step-time.png"));
    assertEquals((byte) 0x89, png[0]);
    assertEquals('P', png[1]);
  }

  @Test
  void badOptionsThrowATypedInputErrorNamingTheOption() {
    SimulateRunner.Options o = new SimulateRunner.Options();
    o.model = "gpt-mini";
    o.pattern = "3:3";
    PrintStream sink = new PrintStream(new ByteArrayOutputStream());
    SimulationInputException e =
        assertThrows(SimulationInputException.class, () -> SimulateRunner.run(o, sink));
    assertTrue(e.getMessage().contains("3:3"), e.getMessage());
    o.pattern = "unstructured";
    o.chip = "tpu";
    e = assertThrows(SimulationInputException.class, () -> SimulateRunner.run(o, sink));
    assertTrue(e.getMessage().contains("tpu"), e.getMessage());
  }

  @Test
  void unwritableOutputThrowsATypedOutputError(@TempDir Path dir) throws Exception {
    SimulateRunner.Options o = new SimulateRunner.Options();
    o.model = "gpt-mini";
    o.chips = 1;
    Path file = dir.resolve("not-a-dir");
    Files.writeString(file, "x");
    o.out = file;
    PrintStream sink = new PrintStream(new ByteArrayOutputStream());
    SimulationOutputException e =
        assertThrows(SimulationOutputException.class, () -> SimulateRunner.run(o, sink));
    assertTrue(e.getMessage().contains("not-a-dir"), e.getMessage());
  }
}
