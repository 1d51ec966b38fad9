package org.sparseflow.bench.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.deeplearning4j.nn.conf.RNNFormat;
import org.junit.jupiter.api.Test;

class GraphStepBenchmarkTest {

  @Test
  void badOptionsAreRejectedNamingTheValue() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--steps", "2"}));
    assertTrue(
        e.getMessage().contains("--steps = 2") && e.getMessage().contains(">= 5"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--sparsity", "1.0"}));
    assertTrue(e.getMessage().contains("--sparsity = 1.0"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--variants", "dense,sparse"}));
    assertTrue(
        e.getMessage().contains("'sparse'") && e.getMessage().contains("block16"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--steps", "ten"}));
    assertTrue(
        e.getMessage().contains("--steps = ten") && e.getMessage().contains("integer"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--format", "nhwc"}));
    assertTrue(
        e.getMessage().contains("--format = nhwc") && e.getMessage().contains("ncw"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> GraphStepBenchmark.main(new String[] {"--fast"}));
    assertTrue(e.getMessage().contains("--fast"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--size", "gpt-huge"}));
    assertTrue(
        e.getMessage().contains("--size = gpt-huge") && e.getMessage().contains("gpt-small"),
        e.getMessage());
  }

  @Test
  void blockSparseVariantTrainsAndTimesEveryStep() throws Exception {
    for (RNNFormat f : RNNFormat.values()) {
      double[] ms = GraphStepBenchmark.run("block16", 4, 0.885, "local:16", f)[0];
      assertEquals(4, ms.length);
      for (double m : ms) {
        assertTrue(m > 0 && Double.isFinite(m), "step time " + m + " " + f);
      }
    }
  }

  @Test
  void sameDiffVariantRunsTheRewrittenGraph() {
    double[][] t = SameDiffStep.run("block16", 3, 0.875, "local:16");
    assertEquals(3, t[0].length);
    assertEquals(3, t[1].length);
    for (double m : t[0]) {
      assertTrue(m > 0 && Double.isFinite(m), "step time " + m);
    }
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> GraphStepBenchmark.main(new String[] {"--model", "cg"}));
    assertTrue(e.getMessage().contains("--model = cg"), e.getMessage());
  }

  @Test
  void packedStorageRunsAndRefusesCachedLayouts() {
    double[][] t =
        SameDiffStep.run("gpt-mini", "block16", 3, 0.875, "local:16", false, null, null, "packed");
    assertEquals(3, t[0].length);
    for (double m : t[0]) {
      assertTrue(m > 0 && Double.isFinite(m), "step time " + m);
    }
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                GraphStepBenchmark.main(
                    new String[] {
                      "--model", "samediff", "--storage", "packed", "--cached-layouts"
                    }));
    assertTrue(e.getMessage().contains("--storage = packed"), e.getMessage());
  }
}
