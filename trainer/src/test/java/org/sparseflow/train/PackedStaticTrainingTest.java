package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.ops.samediff.PackedMatmulOp;

/**
 * {@code train} with a static sparsity file in packed storage on the SameDiff GPT: the weights are
 * their kept blocks, the run matches masked storage, and interrupt + resume is exact.
 */
class PackedStaticTrainingTest {

  private static TrainConfig config(Path sparsity) {
    TrainConfig c = SparseSameDiffMstTest.trainConfig();
    c.sparsity = sparsity.toString();
    c.mstDeltaT = null;
    c.steps = 8;
    return c;
  }

  @Test
  void packedStaticRunsLikeMaskedAndResumesExactly(@TempDir Path tmp) throws Exception {
    Path packed = tmp.resolve("packed.yaml");
    Files.writeString(packed, "pattern: block16\nsparsity: 0.75\nstorage: packed\n");
    Path masked = tmp.resolve("masked.yaml");
    Files.writeString(masked, "pattern: block16\nsparsity: 0.75\n");
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());

    Trainer full =
        Experiments.start(config(packed), tmp.resolve("full")).progress(quiet, false, "");
    SameDiff graph = (SameDiff) full.experiment().model().unwrap();
    assertTrue(graph.getOps().values().stream().anyMatch(o -> o.getOp() instanceof PackedMatmulOp));
    assertFalse(graph.hasVariable("h0_mlp_fc"), "the dense weight left the graph");
    Trainer.Result a = full.run();
    Trainer.Result m =
        Experiments.start(config(masked), tmp.resolve("masked")).progress(quiet, false, "").run();
    assertEquals(m.trainLoss(), a.trainLoss(), 1e-4, "packed and masked storage train alike");
    assertEquals(m.density(), a.density(), 1e-12, "the same kept share is reported");

    assertTrue(SparseSameDiffMstTest.resumesExactly(config(packed), a, tmp, 4) > 0);
  }
}
