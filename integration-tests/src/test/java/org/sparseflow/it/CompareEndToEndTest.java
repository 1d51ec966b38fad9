package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.train.Json;

/**
 * {@code sparseflow compare} end to end with a reduced budget (gpt-tiny, 12 steps): both runs
 * train, the table, the loss-vs-FLOPs plot, comparison.json and the SIMULATED chip-vs-GPU table
 * appear, and MST spends fewer training FLOPs than dense at a lower final density.
 */
class CompareEndToEndTest {

  @Test
  void shortCompareProducesTablePlotAndSimulation(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("compare");
    CliErrorsTest.Run r =
        CliErrorsTest.cli(
            "compare",
            "--model",
            "gpt-tiny",
            "--steps",
            "12",
            "--context-length",
            "16",
            "--batch-size",
            "4",
            "--eval-windows",
            "8",
            "--lr",
            "3e-3",
            "--plain-progress",
            "--out",
            out.toString());
    assertEquals(0, r.code(), r.err() + "\n" + r.out());
    assertTrue(
        r.out().matches("(?s).*\\n\\s*run\\s+val loss\\s+train loss\\s+training FLOPs.*"), r.out());
    assertTrue(r.out().contains("\ndense "), r.out());
    // the default sparse side: MST with 16x16 blocks, executed by the sparse SameDiff ops
    assertTrue(r.out().contains("\nmst-gpt-mini-block16 "), r.out());
    assertTrue(
        r.out()
            .matches(
                "(?s).*RESULT compare mst-gpt-mini-block16 steps=12 val_loss=\\S+"
                    + " dense_val_loss=\\S+ loss_gap_pct=\\S+ flop_reduction=\\S+"
                    + " wall_speedup=\\S+ reaches_dense_val_loss_at_step=\\S+.*"),
        r.out());
    assertTrue(r.out().contains("SIMULATED"), r.out());

    assertTrue(Files.size(out.resolve("val_loss_vs_flops.png")) > 1000);
    for (String run : new String[] {"dense", "mst-gpt-mini-block16"}) {
      Path dir = out.resolve(run);
      for (String f :
          new String[] {
            "checkpoint.zip", "model.zip", "metrics.jsonl", "summary.json", "plots/loss.png"
          }) {
        assertTrue(Files.isRegularFile(dir.resolve(f)), run + "/" + f);
      }
      JsonNode summary = Json.read(dir.resolve("summary.json"));
      assertEquals("completed", summary.get("status").asText());
      assertEquals(64, summary.at("/corpus/sha256").asText().length());
      assertTrue(summary.at("/provenance/java_version").isTextual());
      assertEquals(12, summary.at("/config/steps").asInt());
    }
    JsonNode cmp = Json.read(out.resolve("comparison.json"));
    JsonNode dense = cmp.get("runs").get(0);
    JsonNode mst = cmp.get("runs").get(1);
    assertEquals("dense", dense.get("name").asText());
    assertEquals("mst-gpt-mini-block16", mst.get("name").asText());
    assertEquals(1.0, dense.get("final_density").asDouble(), 1e-12);
    assertTrue(
        mst.get("final_density").asDouble() < 0.9, "MST density " + mst.get("final_density"));
    assertTrue(
        mst.get("training_flops").asDouble() < dense.get("training_flops").asDouble(),
        "MST FLOPs " + mst.get("training_flops") + " vs dense " + dense.get("training_flops"));
    assertTrue(cmp.get("simulation_SIMULATED").size() >= 3, cmp.toString());
    // both losses are finite and below the uniform-guess loss ln(vocab) after training
    for (JsonNode run : cmp.get("runs")) {
      assertTrue(run.get("val_loss").asDouble() < Math.log(90), run.toString());
    }
  }

  /**
   * A dense learning-rate sweep with the schedule options: dense trains once per rate, the RESULT
   * line measures MST against the best of them, and every run records the same schedule.
   */
  @Test
  void denseSweepComparesWithTheBestDenseRun(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("sweep");
    CliErrorsTest.Run r =
        CliErrorsTest.cli(
            "compare",
            "--model",
            "gpt-tiny",
            "--steps",
            "8",
            "--context-length",
            "16",
            "--batch-size",
            "4",
            "--eval-windows",
            "8",
            "--lr",
            "3e-3",
            "--dense-lr",
            "1e-3,3e-3",
            "--lr-warmup",
            "0.25",
            "--lr-decay",
            "cosine",
            "--grad-clip",
            "1",
            "--no-simulate",
            "--plain-progress",
            "--out",
            out.toString());
    assertEquals(0, r.code(), r.err() + "\n" + r.out());
    JsonNode cmp = Json.read(out.resolve("comparison.json"));
    JsonNode runs = cmp.get("runs");
    assertEquals(3, runs.size(), cmp.toString());
    assertEquals("dense-lr0.001", runs.get(0).get("name").asText());
    assertEquals("dense-lr0.003", runs.get(1).get("name").asText());
    assertTrue(runs.get(0).get("dense_baseline").asBoolean());
    assertTrue(!runs.get(2).get("dense_baseline").asBoolean());
    JsonNode best =
        runs.get(0).get("val_loss").asDouble() <= runs.get(1).get("val_loss").asDouble()
            ? runs.get(0)
            : runs.get(1);
    String line =
        r.out().lines().filter(l -> l.startsWith("RESULT compare")).findFirst().orElseThrow();
    assertTrue(line.contains(" dense_run=" + best.get("name").asText() + " "), line);
    assertTrue(line.contains(" dense_runs=2 "), line);
    assertTrue(
        line.matches(".* test_loss=\\d\\S* dense_test_loss=\\d\\S* test_gap_pct=-?\\d\\S*"), line);
    assertTrue(
        line.contains(
            String.format(Locale.ROOT, " dense_val_loss=%.4f ", best.get("val_loss").asDouble())),
        line);
    for (String run : new String[] {"dense-lr0.001", "dense-lr0.003", "mst-gpt-mini-block16"}) {
      JsonNode config = Json.read(out.resolve(run).resolve("summary.json")).get("config");
      assertEquals("cosine", config.get("lrDecay").asText(), run);
      assertEquals(0.25, config.get("lrWarmup").asDouble(), run);
      assertEquals(1.0, config.get("gradClip").asDouble(), run);
    }
    assertEquals(
        1e-3,
        Json.read(out.resolve("dense-lr0.001/summary.json")).at("/config/learningRate").asDouble());
  }

  @Test
  void badDenseRateIsRefusedBeforeAnyRun(@TempDir Path tmp) throws Exception {
    Path out = tmp.resolve("bad");
    CliErrorsTest.Run r =
        CliErrorsTest.cli(
            "compare", "--model", "gpt-tiny", "--dense-lr", "1e-3,2", "--out", out.toString());
    assertTrue(r.code() != 0, r.out());
    assertTrue(r.err().contains("--dense-lr: 2.0"), r.err());
    assertTrue(!Files.exists(out), "nothing is created on bad input");
  }
}
