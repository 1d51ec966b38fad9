package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20 items 2 and 7: a checkpoint is checked (zip, manifest checksums, state ranges, model
 * kind) before anything uses it, and every failure names the file and the problem.
 */
class CheckpointValidationTest {

  @TempDir Path tmp;

  static Checkpoint sample() {
    Checkpoint.State s = new Checkpoint.State();
    s.step = 3;
    s.config = new TrainConfig();
    s.config.steps = 10;
    s.modelKind = "dl4j";
    s.vocabulary = "abc ";
    s.corpusSha256 = "0".repeat(64);
    byte[] model = {'P', 'K', 3, 4, 1, 2, 3, 4, 5, 6, 7, 8};
    return new Checkpoint(s, model, new byte[] {9, 9, 9});
  }

  private String error(Path file) {
    String m =
        assertThrows(IllegalArgumentException.class, () -> Checkpoint.read(file)).getMessage();
    assertTrue(m.startsWith("checkpoint " + file + " is corrupt: "), m);
    return m;
  }

  private static Map<String, byte[]> entries(Path zip) throws Exception {
    Map<String, byte[]> m = new LinkedHashMap<>();
    try (ZipFile z = new ZipFile(zip.toFile())) {
      for (ZipEntry e : Collections.list(z.entries())) {
        m.put(e.getName(), z.getInputStream(e).readAllBytes());
      }
    }
    return m;
  }

  private static void rezip(Path zip, Map<String, byte[]> entries) throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    try (ZipOutputStream out = new ZipOutputStream(buf)) {
      for (Map.Entry<String, byte[]> e : entries.entrySet()) {
        out.putNextEntry(new ZipEntry(e.getKey()));
        out.write(e.getValue());
        out.closeEntry();
      }
    }
    Files.write(zip, buf.toByteArray());
  }

  @Test
  void roundTripWithManifest() throws Exception {
    Path f = tmp.resolve("checkpoint.zip");
    sample().writeTo(f);
    assertTrue(entries(f).containsKey("manifest.json"));
    Checkpoint back = Checkpoint.read(f);
    assertEquals(3, back.state().step);
    assertArrayEquals(sample().model(), back.model());
  }

  @Test
  void editedStateFailsItsChecksum() throws Exception {
    Path f = tmp.resolve("checkpoint.zip");
    sample().writeTo(f);
    Map<String, byte[]> e = entries(f);
    e.put(
        "state.json",
        new String(e.get("state.json"), StandardCharsets.UTF_8)
            .replace("\"step\" : 3", "\"step\" : -7")
            .getBytes(StandardCharsets.UTF_8));
    rezip(f, e);
    assertTrue(error(f).endsWith("entry state.json fails its checksum"));
  }

  @Test
  void oldCheckpointWithoutManifestStillLoadsAndRangesAreChecked() throws Exception {
    Path f = tmp.resolve("checkpoint.zip");
    sample().writeTo(f);
    Map<String, byte[]> e = entries(f);
    e.remove("manifest.json");
    rezip(f, e);
    assertEquals(3, Checkpoint.read(f).state().step);
    e.put(
        "state.json",
        new String(e.get("state.json"), StandardCharsets.UTF_8)
            .replace("\"step\" : 3", "\"step\" : -7")
            .getBytes(StandardCharsets.UTF_8));
    rezip(f, e);
    String m = error(f);
    assertTrue(m.contains("'step' = -7") && m.contains("allowed: 0..10"), m);
  }

  @Test
  void truncatedAndFlippedFilesNameTheFile() throws Exception {
    Path f = tmp.resolve("checkpoint.zip");
    sample().writeTo(f);
    byte[] good = Files.readAllBytes(f);
    for (int cut : new int[] {0, 10, good.length / 2, good.length - 5}) {
      Files.write(f, Arrays.copyOf(good, cut));
      error(f);
    }
    // flip every byte in turn: each copy must be rejected or read back identically
    for (int i = 0; i < good.length; i++) {
      byte[] bad = good.clone();
      bad[i] ^= 0x5A;
      Files.write(f, bad);
      try {
        Checkpoint c = Checkpoint.read(f);
        assertEquals(3, c.state().step, "flip at " + i);
        assertArrayEquals(sample().model(), c.model(), "flip at " + i);
      } catch (IllegalArgumentException expected) {
        assertTrue(expected.getMessage().contains(f.toString()), expected.getMessage());
      }
    }
  }

  @Test
  void modelKindMustMatchTheModelBytes() throws Exception {
    Checkpoint c = sample();
    c.state().modelKind = "samediff";
    Path f = tmp.resolve("checkpoint.zip");
    c.writeTo(f);
    assertTrue(error(f).contains("model kind is 'samediff'"));
    c.state().modelKind = "tensorflow";
    c.writeTo(f);
    assertTrue(error(f).contains("'modelKind' = tensorflow"));
  }

  @Test
  void otherStateRanges() throws Exception {
    Path f = tmp.resolve("checkpoint.zip");
    Checkpoint c = sample();
    c.state().step = 11;
    c.writeTo(f);
    assertTrue(error(f).contains("'step' = 11"));
    c = sample();
    c.state().vocabulary = "a";
    c.writeTo(f);
    assertTrue(error(f).contains("'vocabulary'"));
    c = sample();
    c.state().config.batchSize = -1;
    c.writeTo(f);
    assertTrue(error(f).contains("--batch-size: -1"));
    c = sample();
    c.state().cumulativeFlops = -1;
    c.writeTo(f);
    assertTrue(error(f).contains("'cumulativeFlops' = -1.0"));
  }
}
