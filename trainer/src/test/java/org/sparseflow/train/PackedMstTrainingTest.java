package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.sparseflow.ops.samediff.PackedMatmulOp;

/**
 * {@code train --storage packed --sparse-start} with an MST preset on the SameDiff GPT: the
 * attention/MLP weights are packed kept-block variables that MST re-lays out at its topology steps;
 * the run trains, and interrupt + resume is bit-exact.
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

  @Test
  void packedWithoutSparseStartOrOnStaticSparsityIsANamedError() {
    TrainConfig c = config();
    c.mstSparseStart = false;
    Exception e = assertThrows(IllegalArgumentException.class, c::validate);
    assertTrue(e.getMessage().contains("--storage packed needs --sparse-start"), e.getMessage());
    TrainConfig d = config();
    d.mstStorage = "compressed";
    e = assertThrows(IllegalArgumentException.class, d::validate);
    assertTrue(e.getMessage().contains("allowed: masked, packed"), e.getMessage());
    TrainConfig dense = config();
    dense.sparsity = "dense";
    e = assertThrows(IllegalArgumentException.class, () -> SparsityDrivers.resolve(dense));
    assertTrue(e.getMessage().contains("they apply to MST runs"), e.getMessage());
  }
}
