package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
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
}
