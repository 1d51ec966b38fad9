package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.hw.GpuSpec;
import org.sparseflow.dataflow.hw.Hardware;

class HardwareSpecTest {

  static String resource(String id) throws IOException {
    try (InputStream in =
        ChipSpec.class.getResourceAsStream("/org/sparseflow/dataflow/hw/" + id + ".json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void everyBuiltinLoadsWithASourceForEveryValue() {
    for (String id : Hardware.CHIPS) {
      ChipSpec c = ChipSpec.builtin(id);
      assertTrue(c.peakFlops() > 0 && c.onChipMemoryBytes() > 0 && c.offChipBandwidth() > 0, id);
      assertTrue(c.sources().size() >= 14, id + " sources: " + c.sources().keySet());
      c.sources().values().forEach(s -> assertFalse(s.isBlank()));
    }
    for (String id : Hardware.GPUS) {
      GpuSpec g = GpuSpec.builtin(id);
      assertTrue(g.sources().size() >= 10, id + " sources: " + g.sources().keySet());
      assertTrue(
          g.matmulEfficiency(1e12) > g.matmulEfficiency(1e6), "efficiency grows with GEMM size");
    }
    assertEquals("A100-80GB", GpuSpec.builtin("a100").name());
  }

  @Test
  void unknownFieldIsRejectedByName() throws IOException {
    String json =
        resource("sn30")
            .replaceFirst("\\{", "{\"hbmBandwidth\": {\"value\": 1, \"source\": \"x\"},");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ChipSpec.fromJson("user.json", json));
    assertTrue(
        e.getMessage().contains("hbmBandwidth") && e.getMessage().contains("user.json"),
        e.getMessage());
  }

  @Test
  void valueWithoutSourceIsRejected() throws IOException {
    String json =
        resource("a100-80gb")
            .replaceFirst(
                "\"memBandwidthGBs\": \\{\"value\": 2039, \"source\": \"[^\"]*\"\\}",
                "\"memBandwidthGBs\": {\"value\": 2039}");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> GpuSpec.fromJson("g.json", json));
    assertTrue(
        e.getMessage().contains("memBandwidthGBs") && e.getMessage().contains("source"),
        e.getMessage());
  }

  @Test
  void contradictoryPeakIsRejected() throws IOException {
    String json =
        resource("sn30")
            .replaceFirst("\"peakTflops\": \\{\"value\": 614.4", "\"peakTflops\": {\"value\": 688");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ChipSpec.fromJson("c.json", json));
    assertTrue(
        e.getMessage().contains("contradictory") && e.getMessage().contains("688"), e.getMessage());
  }

  @Test
  void outOfRangeAndMissingFieldsAreRejected() throws IOException {
    String bad =
        resource("sn10")
            .replaceFirst(
                "\"systolicEfficiency\": \\{\"value\": 0.8",
                "\"systolicEfficiency\": {\"value\": 1.5");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ChipSpec.fromJson("c.json", bad));
    assertTrue(
        e.getMessage().contains("systolicEfficiency") && e.getMessage().contains("1.5"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> GpuSpec.fromJson("g.json", "{\"name\": \"x\"}"));
    assertTrue(e.getMessage().contains("missing required field"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> ChipSpec.builtin("sn99"));
    assertTrue(e.getMessage().contains("sn99") && e.getMessage().contains("sn30"), e.getMessage());
  }

  @Test
  void userFilesAreAccepted(@TempDir Path dir) throws IOException {
    Path f = dir.resolve("mychip.json");
    Files.writeString(f, resource("sn30").replace("\"name\": \"SN30\"", "\"name\": \"MyChip\""));
    assertEquals("MyChip", Hardware.chip(f.toString()).name());
    Path g = dir.resolve("mygpu.json");
    Files.writeString(g, resource("h100"));
    assertEquals("H100-SXM", Hardware.gpu(g.toString()).name());
  }
}
