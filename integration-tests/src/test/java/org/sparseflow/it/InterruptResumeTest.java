package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.train.Checkpoint;
import org.sparseflow.train.Experiments;
import org.sparseflow.train.Json;
import org.sparseflow.train.MetricsLog;
import org.sparseflow.train.TrainConfig;
import org.sparseflow.train.Trainer;

/**
 * Train -> interrupt (through {@link Trainer#requestStop()}, the path the Ctrl-C shutdown hook
 * takes) -> resume gives exactly the parameters and metrics of an uninterrupted run with the same
 * seed.
 */
class InterruptResumeTest {

  private static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

  static TrainConfig config(String sparsity) {
    TrainConfig c = new TrainConfig();
    c.model = "gpt-tiny";
    c.sparsity = sparsity;
    c.steps = 12;
    c.seed = 7;
    c.batchSize = 4;
    c.contextLength = 16;
    c.evalEvery = 4;
    c.evalWindows = 8;
    c.checkpointEvery = 100;
    c.learningRate = 3e-3;
    return c;
  }

  @Test
  void denseResumeEqualsUninterrupted(@TempDir Path tmp) throws Exception {
    check(tmp, null);
  }

  @Test
  void mstResumeEqualsUninterrupted(@TempDir Path tmp) throws Exception {
    // MST with a topology update every 3 steps, so the cut at step 5 lands between updates with
    // masks,
    // optimizer state and the MST RNG all in play
    Path yaml = Path.of(InterruptResumeTest.class.getResource("/mst-fast.yaml").toURI());
    check(tmp, yaml.toString());
    var rows = MetricsLog.read(tmp.resolve("cut").resolve("metrics.jsonl"));
    double lastDensity = rows.get(rows.size() - 1).get("density").asDouble();
    assertTrue(lastDensity < 0.9, "MST made the model sparse: density " + lastDensity);
  }

  static void check(Path tmp, String sparsity) throws Exception {
    Trainer full =
        Experiments.start(config(sparsity), tmp.resolve("full")).progress(QUIET, false, "");
    Trainer.Result a = full.run();
    assertEquals(Trainer.Status.COMPLETED, a.status());

    Trainer first =
        Experiments.start(config(sparsity), tmp.resolve("cut")).progress(QUIET, false, "");
    first.addListener(
        (t, step, rec) -> {
          if (step == 5) {
            t.requestStop();
          }
        });
    Trainer.Result b1 = first.run();
    assertEquals(Trainer.Status.INTERRUPTED, b1.status());
    assertEquals(5, b1.step());
    assertEquals(5, Checkpoint.read(tmp.resolve("cut").resolve(Checkpoint.FILE_NAME)).state().step);
    assertTrue(
        !Files.exists(tmp.resolve("cut").resolve("model.zip")),
        "no final model for an unfinished run");

    Trainer resumed = Experiments.resume(tmp.resolve("cut"), null).progress(QUIET, false, "");
    Trainer.Result b = resumed.run();
    assertEquals(Trainer.Status.COMPLETED, b.status());
    assertEquals(a.step(), b.step());
    assertEquals(a.trainLoss(), b.trainLoss(), 1e-6);
    assertEquals(a.valLoss(), b.valLoss(), 1e-6);
    assertEquals(a.flops(), b.flops(), 1e-6 * a.flops());
    assertEquals(a.density(), b.density(), 1e-9);

    // every parameter equal
    byte[] pa = Checkpoint.read(tmp.resolve("full").resolve(Checkpoint.FILE_NAME)).model();
    byte[] pb = Checkpoint.read(tmp.resolve("cut").resolve(Checkpoint.FILE_NAME)).model();
    var sa = SameDiff.load(new ByteArrayInputStream(pa), false);
    var sb = SameDiff.load(new ByteArrayInputStream(pb), false);
    for (var v : sa.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE) {
        float[] x = v.getArr().dup().data().asFloat();
        float[] y = sb.getVariable(v.name()).getArr().dup().data().asFloat();
        assertEquals(x.length, y.length);
        for (int i = 0; i < x.length; i++) {
          assertEquals(x[i], y[i], 1e-6, v.name() + "[" + i + "]");
        }
      }
    }

    // metrics: same steps and losses (elapsed time differs)
    List<JsonNode> ma = MetricsLog.read(tmp.resolve("full").resolve("metrics.jsonl"));
    List<JsonNode> mb = MetricsLog.read(tmp.resolve("cut").resolve("metrics.jsonl"));
    assertEquals(ma.size(), mb.size());
    for (int i = 0; i < ma.size(); i++) {
      assertEquals(ma.get(i).get("step").asLong(), mb.get(i).get("step").asLong());
      for (String k : new String[] {"loss", "val_loss", "density"}) {
        assertEquals(ma.get(i).has(k), mb.get(i).has(k), k + " at record " + i);
        if (ma.get(i).has(k)) {
          assertEquals(
              ma.get(i).get(k).asDouble(),
              mb.get(i).get(k).asDouble(),
              1e-6,
              k + " at record " + i);
        }
      }
    }
    assertArrayEquals(
        new String[] {"completed"},
        new String[] {
          Experiments.class.getSimpleName().isEmpty()
              ? ""
              : Json.read(tmp.resolve("cut").resolve("summary.json")).get("status").asText()
        });
  }
}
