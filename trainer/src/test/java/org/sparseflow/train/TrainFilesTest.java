package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainFilesTest {

  @Test
  void atomicWriteKeepsOldFileWhenWriterFails(@TempDir Path dir) throws IOException {
    Path f = dir.resolve("checkpoint.zip");
    AtomicFiles.writeString(f, "good");
    assertThrows(
        IOException.class,
        () ->
            AtomicFiles.write(
                f,
                out -> {
                  out.write("half".getBytes(StandardCharsets.UTF_8));
                  throw new IOException("disk full");
                }));
    assertEquals("good", Files.readString(f));
    try (var s = Files.list(dir)) {
      assertEquals(1, s.count(), "temporary file must be removed");
    }
    AtomicFiles.writeString(f, "better");
    assertEquals("better", Files.readString(f));
  }

  @Test
  void checkpointRoundTrip(@TempDir Path dir) throws IOException {
    Checkpoint.State s = new Checkpoint.State();
    s.step = 17;
    s.cumulativeFlops = 1.5e12;
    s.lastLoss = 2.5;
    s.lastValLoss = 2.75;
    s.modelKind = "samediff";
    s.vocabulary = "abc\n";
    s.corpusSha256 = "00";
    s.config = new TrainConfig();
    s.config.steps = 99;
    s.config.sparsity = "mst";
    byte[] model = {1, 2, 3};
    byte[] sparsity = {9, 8};
    Path f = dir.resolve("checkpoint.zip");
    new Checkpoint(s, model, sparsity).writeTo(f);
    Checkpoint back = Checkpoint.read(f);
    assertEquals(17, back.state().step);
    assertEquals(2.75, back.state().lastValLoss);
    assertEquals("abc\n", back.state().vocabulary);
    assertEquals(99, back.state().config.steps);
    assertEquals("mst", back.state().config.sparsity);
    assertArrayEquals(model, back.model());
    assertArrayEquals(sparsity, back.sparsity());
  }

  @Test
  void readingANonCheckpointFails(@TempDir Path dir) throws IOException {
    Path f = dir.resolve("checkpoint.zip");
    Files.writeString(f, "not a zip");
    assertThrows(IllegalArgumentException.class, () -> Checkpoint.read(f));
  }

  @Test
  void trainConfigJsonRoundTripAndValidation() throws IOException {
    TrainConfig c = new TrainConfig();
    c.model = "gpt-small";
    c.steps = 5;
    c.learningRate = 3e-4;
    TrainConfig back = Json.MAPPER.readValue(Json.pretty(c), TrainConfig.class);
    assertEquals(Json.pretty(c), Json.pretty(back));
    c.steps = 0;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::validate);
    assertTrue(e.getMessage().startsWith("--steps: 0"), e.getMessage());
    c.steps = 1;
    c.learningRate = -1;
    assertTrue(
        assertThrows(IllegalArgumentException.class, c::validate).getMessage().startsWith("--lr"));
  }

  @Test
  void metricsLogDropsRecordsAfterTheCheckpointStep(@TempDir Path dir) throws IOException {
    Path f = dir.resolve("metrics.jsonl");
    try (MetricsLog log = new MetricsLog(f)) {
      log.open(0);
      for (long s = 1; s <= 5; s++) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("step", s);
        r.put("loss", 1.0 / s);
        log.append(r);
      }
    }
    Files.writeString(
        f, Files.readString(f) + "{\"step\":6,\"lo", StandardCharsets.UTF_8); // cut by a crash
    try (MetricsLog log = new MetricsLog(f)) {
      log.open(3);
    }
    var rows = MetricsLog.read(f);
    assertEquals(3, rows.size());
    assertEquals(3, rows.get(2).get("step").asLong());
  }

  @Test
  void runDirectoryRefusesToOverwriteARun(@TempDir Path dir) throws IOException {
    Path run = dir.resolve("run");
    RunDirectory.create(run);
    Files.writeString(run.resolve(Checkpoint.FILE_NAME), "x");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> RunDirectory.create(run));
    assertTrue(e.getMessage().contains("--resume"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> RunDirectory.open(dir.resolve("absent")));
  }

  @Test
  void progressBarShowsEtaLossSparsityAndFlops() {
    ProgressBar bar = new ProgressBar(System.err, false, 100, "mst");
    String line = bar.render(50, 0, 25.0, 1.2345, 1.5, 0.25, 3.2e12);
    assertTrue(line.startsWith("mst [############............] 50/100"), line);
    assertTrue(line.contains("ETA 00:25"), line);
    assertTrue(line.contains("loss 1.2345") && line.contains("val 1.5000"), line);
    assertTrue(line.contains("sparsity 75.0%"), line);
    assertTrue(line.contains("FLOPs 3.20T"), line);
    assertEquals("1:01:01", ProgressBar.duration(3661));
  }
}
