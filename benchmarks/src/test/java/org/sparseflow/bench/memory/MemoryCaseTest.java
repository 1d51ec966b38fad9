package org.sparseflow.bench.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The memory suite's accounting on gpt-tiny (byte counts only; no timings). */
class MemoryCaseTest {

  private static long get(Map<String, String> r, String key) {
    return Long.parseLong(r.get(key));
  }

  @Test
  void packedStorageCountsOnlyKeptWeightsAndMaskedCostsMoreThanDense() throws Exception {
    Map<String, String> dense = MemoryCase.run("gpt-tiny", "dense", "block16", 1.0, 1, 16, 2, 1);
    Map<String, String> packed = MemoryCase.run("gpt-tiny", "packed", "block16", 0.25, 1, 16, 2, 1);
    Map<String, String> masked = MemoryCase.run("gpt-tiny", "masked", "block16", 0.25, 1, 16, 2, 1);
    // gpt-tiny: 2 layers, d_model 32; sparse layers: fc 32x128 and proj 128x32 (16 blocks each,
    // 4 kept), q, k, v, o 32x32 (4 blocks each, 1 kept); biases stay whole
    long denseWeights = 2 * (2 * 32 * 128 + 4 * 32 * 32);
    long biases = 2 * (128 + 32 + 4 * 32);
    assertEquals(4 * (denseWeights + biases), get(dense, "sparse_param_bytes"));
    assertEquals(4 * (denseWeights / 4 + biases), get(packed, "sparse_param_bytes"));
    assertEquals(get(packed, "sparse_param_bytes"), get(packed, "sparse_grad_bytes"));
    assertEquals(2 * get(packed, "sparse_param_bytes"), get(packed, "sparse_optimizer_bytes"));
    // masked: W plus a mask param of the same size; the mask's Sgd(0) keeps no state
    assertEquals(4 * (2 * denseWeights + biases), get(masked, "sparse_param_bytes"));
    assertEquals(get(dense, "sparse_optimizer_bytes"), get(masked, "sparse_optimizer_bytes"));
    assertTrue(get(packed, "checkpoint_bytes") < get(dense, "checkpoint_bytes"));
    assertTrue(
        get(dense, "model_param_bytes") - get(packed, "model_param_bytes")
            == get(dense, "sparse_param_bytes") - get(packed, "sparse_param_bytes"));
  }

  @Test
  void mstOnPackedStorageHoldsItsLastPhasesBlocksNotTheDenseWeights() throws Exception {
    Map<String, String> dense = MemoryCase.run("gpt-tiny", "dense", "block16", 1.0, 1, 16, 2, 1);
    Map<String, String> mst =
        MemoryCase.run("gpt-tiny", "mst-packed", "block16", 0.25, 6, 16, 2, 1);
    long biases = 4 * 2 * (128 + 32 + 4 * 32);
    long weights = get(mst, "sparse_param_bytes") - biases;
    long denseWeights = get(dense, "sparse_param_bytes") - biases;
    // the restoration phase's capacity: a quarter of the blocks, plus at most two 16x16 blocks of
    // 4-byte floats per weight (rounding and the spare slot) for its 12 weights
    assertTrue(weights >= denseWeights / 4, weights + " bytes of " + denseWeights);
    assertTrue(
        weights <= denseWeights / 4 + 12L * 2 * 256 * 4, weights + " bytes of " + denseWeights);
    assertEquals(get(mst, "sparse_param_bytes"), get(mst, "sparse_grad_bytes"));
    assertEquals(2 * get(mst, "sparse_param_bytes"), get(mst, "sparse_optimizer_bytes"));
    assertTrue(get(mst, "checkpoint_bytes") < get(dense, "checkpoint_bytes") / 2);
  }

  @Test
  void badOptionsNameTheOption() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MemoryBenchmark.main(new String[] {"--pattern", "block12"}));
    assertTrue(e.getMessage().contains("--pattern = block12"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MemoryBenchmark.main(new String[] {"--sparsities", "1.5"}));
    assertTrue(e.getMessage().contains("--sparsities contains 1.5"), e.getMessage());
  }
}
