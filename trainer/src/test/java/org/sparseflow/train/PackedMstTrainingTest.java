package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.sparseflow.ops.samediff.PackedMatmulOp;

/**
 * {@code train --storage packed} with an MST preset on the SameDiff GPT: the attention/MLP weights
 * are packed kept-block variables that MST re-lays out at its topology steps; the run trains,
 * interrupt + resume is bit-exact, and a dense warm-up starts from all blocks, as the masked run.
 */
class PackedMstTrainingTest {

  private static TrainConfig config() {
    TrainConfig c = SparseSameDiffMstTest.trainConfig();
    c.mstStorage = "packed";
    c.mstSparseStart = true;
    c.steps = 12;
    return c;
  }

  @Test
  void packedMstTrainsAndResumesExactly(@TempDir Path tmp) throws Exception {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer full = Experiments.start(config(), tmp.resolve("full")).progress(quiet, false, "");
    SameDiff graph = (SameDiff) full.experiment().model().unwrap();
    long packedOps =
        graph.getOps().values().stream().filter(o -> o.getOp() instanceof PackedMatmulOp).count();
    assertEquals(12, packedOps, "attention/MLP matmuls run on packed storage");
    assertFalse(graph.hasVariable("h0_mlp_fc"), "the dense weight left the graph");
    Trainer.Result a = full.run();
    assertEquals(Trainer.Status.COMPLETED, a.status());
    assertTrue(a.density() < 0.3, "sparse from the start: density " + a.density());
    assertTrue(Double.isFinite(a.valLoss()));

    SparseSameDiffMstTest.resumesExactly(config(), a, tmp, 5);
    SameDiff saved = SparseSameDiffMstTest.load(tmp.resolve("cut"));
    long packedVars =
        saved.variables().stream()
            .filter(v -> v.getVariableType() == VariableType.VARIABLE)
            .filter(v -> v.name().endsWith("_packed"))
            .count();
    assertEquals(12, packedVars);
  }

  /** The losses of a run's steps. */
  private static List<Double> losses(TrainConfig c, Path dir, List<Long> packedLengths)
      throws Exception {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer t = Experiments.start(c, dir).progress(quiet, false, "");
    SameDiff graph = (SameDiff) t.experiment().model().unwrap();
    if (packedLengths != null) {
      packedLengths.add(graph.getArrForVarName("h0_mlp_fc_packed").length());
    }
    List<Double> out = new ArrayList<>();
    t.addListener(
        (tr, step, m) -> {
          out.add(((Number) m.get("loss")).doubleValue());
          if (packedLengths != null) {
            packedLengths.add(graph.getArrForVarName("h0_mlp_fc_packed").length());
          }
        });
    assertEquals(Trainer.Status.COMPLETED, t.run().status());
    return out;
  }

  @Test
  void aDenseWarmUpOnPackedStorageStartsWithAllBlocksLikeTheMaskedRun(@TempDir Path tmp)
      throws Exception {
    TrainConfig packed = config();
    packed.mstSparseStart = false;
    TrainConfig masked = config();
    masked.mstSparseStart = false;
    masked.mstStorage = "masked";
    List<Long> lengths = new ArrayList<>();
    List<Double> lp = losses(packed, tmp.resolve("packed"), lengths);
    List<Double> lm = losses(masked, tmp.resolve("masked"), null);
    // gpt-tiny's MLP input weight [32, 128]: all of it for the dense start (the preset's warm-up
    // is 5 % of the run, so at 12 steps the arrays shrink to the ultra level after the first step)
    assertEquals(32L * 128, lengths.get(0), "all blocks packed at the dense start");
    assertTrue(lengths.get(lengths.size() - 1) < 32L * 128, "smaller arrays after the warm-up");
    for (int t = 0; t < 2; t++) {
      assertEquals(lm.get(t), lp.get(t), 1e-3 * lm.get(t), "same start: loss of step " + t);
    }
    // a sparse start too: packed at MST's first masks, so the same masks as the masked run
    packed.mstSparseStart = true;
    masked.mstSparseStart = true;
    lp = losses(packed, tmp.resolve("packed-sparse"), null);
    lm = losses(masked, tmp.resolve("masked-sparse"), null);
    for (int t = 0; t < 2; t++) {
      assertEquals(lm.get(t), lp.get(t), 1e-3 * lm.get(t), "sparse start: loss of step " + t);
    }
  }

  @Test
  void unknownStorageOrStorageOnStaticSparsityIsANamedError() {
    TrainConfig d = config();
    d.mstStorage = "compressed";
    Exception e = assertThrows(IllegalArgumentException.class, d::validate);
    assertTrue(e.getMessage().contains("allowed: masked, packed"), e.getMessage());
    TrainConfig dense = config();
    dense.sparsity = "dense";
    e = assertThrows(IllegalArgumentException.class, () -> SparsityDrivers.resolve(dense));
    assertTrue(e.getMessage().contains("they apply to MST runs"), e.getMessage());
  }
}
