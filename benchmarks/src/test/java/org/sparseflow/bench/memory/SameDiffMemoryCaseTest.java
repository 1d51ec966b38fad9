package org.sparseflow.bench.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The memory suite's SameDiff accounting on gpt-tiny (byte counts only; no timings). */
class SameDiffMemoryCaseTest {

  private static long get(Map<String, String> r, String key) {
    return Long.parseLong(r.get(key));
  }

  private static Map<String, String> run(String storage, double density) throws Exception {
    MemoryCase.Size size = new MemoryCase.Size("gpt-tiny", 0, 0, 0, 16, 2);
    return SameDiffMemoryCase.run(size, storage, "block16", density, 1, 1);
  }

  @Test
  void packedStorageCountsKeptBlocksAndMaskedAddsAMaskPerWeight() throws Exception {
    Map<String, String> dense = run("dense", 1.0);
    Map<String, String> packed = run("packed", 0.25);
    Map<String, String> masked = run("masked", 0.25);
    // gpt-tiny: 2 blocks of d_model 32: q, k, v, o 32x32 and the MLP's 32x128 and 128x32 weights
    long weights = 2 * (4 * 32 * 32 + 2 * 32 * 128);
    assertEquals(4 * weights, get(dense, "sparse_param_bytes"));
    assertEquals(get(dense, "sparse_param_bytes"), get(dense, "sparse_grad_bytes"));
    assertEquals(2 * get(dense, "sparse_param_bytes"), get(dense, "sparse_optimizer_bytes"));
    // masked: W plus its 0/1 mask constant; gradients and Adam state for all of W
    assertEquals(2 * get(dense, "sparse_param_bytes"), get(masked, "sparse_param_bytes"));
    assertEquals(get(dense, "sparse_grad_bytes"), get(masked, "sparse_grad_bytes"));
    assertEquals(get(dense, "sparse_optimizer_bytes"), get(masked, "sparse_optimizer_bytes"));
    // packed: the kept 16 x 16 blocks only, everything follows; a quarter of the MLP's, and one
    // block per head (2 of 4) in the attention projections, whose heads are 16 wide: 4096 of 12288
    double share = get(packed, "sparse_param_bytes") / (double) get(dense, "sparse_param_bytes");
    assertEquals(1.0 / 3, share, 1e-12, "packed share");
    assertEquals(get(packed, "sparse_param_bytes"), get(packed, "sparse_grad_bytes"));
    assertEquals(2 * get(packed, "sparse_param_bytes"), get(packed, "sparse_optimizer_bytes"));
    assertEquals(
        get(dense, "model_param_bytes") - get(packed, "model_param_bytes"),
        get(dense, "sparse_param_bytes") - get(packed, "sparse_param_bytes"));
    assertTrue(get(packed, "checkpoint_bytes") < get(dense, "checkpoint_bytes"));
    assertTrue(get(dense, "checkpoint_bytes") < get(masked, "checkpoint_bytes"));
  }

  @Test
  void theSameDiffSuiteTakesBlockPatternsOnly() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                MemoryBenchmark.main(
                    new String[] {"--framework", "samediff", "--pattern", "2:4", "--in-process"}));
    assertTrue(e.getMessage().contains("--pattern = 2:4"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MemoryBenchmark.main(new String[] {"--framework", "tf"}));
    assertTrue(e.getMessage().contains("--framework = tf"), e.getMessage());
  }
}
