package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code --density}: MST runs end at the asked density; other sparsity choices refuse it. */
class TargetDensityTest {

  @Test
  void anMstRunEndsAtTheTargetDensity(@TempDir Path tmp) throws Exception {
    TrainConfig c = SparseSameDiffMstTest.trainConfig();
    c.mstDensity = 0.4;
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer.Result r = Experiments.start(c, tmp.resolve("run")).progress(quiet, false, "").run();
    assertEquals(Trainer.Status.COMPLETED, r.status());
    // 16 x 16 blocks of gpt-tiny's small matrices round the kept share per layer
    assertEquals(0.4, r.density(), 0.05, "density " + r.density());
  }

  @Test
  void denseAndStaticSparsityRefuseADensity(@TempDir Path tmp) throws Exception {
    TrainConfig dense = SparseSameDiffMstTest.trainConfig();
    dense.sparsity = null;
    dense.mstDensity = 0.1;
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparsityDrivers.resolve(dense));
    assertTrue(e.getMessage().startsWith("--density 0.1: only MST sparsity"), e.getMessage());
    Path file = tmp.resolve("fixed.yaml");
    Files.writeString(file, "pattern: block16\nsparsity: 0.5\n");
    TrainConfig fixed = SparseSameDiffMstTest.trainConfig();
    fixed.sparsity = file.toString();
    fixed.mstDensity = 0.1;
    e = assertThrows(IllegalArgumentException.class, () -> SparsityDrivers.resolve(fixed));
    assertTrue(e.getMessage().contains("--density"), e.getMessage());
  }

  @Test
  void outOfRangeDensitiesNameTheOption() {
    for (double d : new double[] {0.0, 1.01, Double.NaN}) {
      TrainConfig c = SparseSameDiffMstTest.trainConfig();
      c.mstDensity = d;
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, c::validate);
      assertTrue(e.getMessage().startsWith("--density: "), e.getMessage());
    }
  }
}
