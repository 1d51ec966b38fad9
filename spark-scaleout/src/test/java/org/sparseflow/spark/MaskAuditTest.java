package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The audit accumulator's bookkeeping and the per-executor port supplier, without a cluster. */
class MaskAuditTest {
  static MaskLedger.Observation obs(
      String executor, int iteration, long violations, boolean match, long digest, long peers) {
    return new MaskLedger.Observation(
        "run", "w", executor, 0, iteration, violations, match, Map.of("0_W", digest), 3, peers);
  }

  @Test
  void mergesWhatEachExecutorReported() {
    // two task-side copies, as Spark deserializes them on two executors
    MaskAudit a = (MaskAudit) new MaskAudit().copyAndReset();
    MaskAudit b = (MaskAudit) new MaskAudit().copyAndReset();
    a.add(obs("0", 1, 0, true, 11, 2));
    a.add(obs("0", 2, 0, true, 11, 5));
    a.addParams("0", 2, new float[] {1f, 2f});
    a.addParams("0", 1, new float[] {9f, 9f});
    b.add(obs("1", 1, 3, false, 12, 0));
    MaskAudit driver = new MaskAudit();
    driver.merge(a);
    driver.merge(b);
    MaskAudit.Summary s = driver.value();
    assertEquals(3, s.observations());
    assertEquals(3, s.prunedNonZero());
    assertEquals(1, s.maskMismatches());
    assertEquals(2, s.maskDigests().size(), "two topologies seen: " + s);
    assertEquals(5, s.byExecutor.get("0").peerUpdates, "most updates received so far");
    assertArrayEquals(new float[] {1f, 2f}, s.byExecutor.get("0").lastParams, "latest step wins");
    assertEquals(3, s.byExecutor.get("1").minMeshNodes);
    MaskAudit.Summary copy = s.copy();
    driver.reset();
    assertTrue(driver.isZero());
    assertEquals(3, copy.observations(), "copy independent of the accumulator");
  }

  @Test
  void combinedDigestDependsOnEveryMask() {
    long one = MaskedWeights.combined(Map.of("0_W", 1L, "1_W", 2L));
    assertEquals(one, MaskedWeights.combined(Map.of("1_W", 2L, "0_W", 1L)), "order-free");
    assertTrue(one != MaskedWeights.combined(Map.of("0_W", 1L, "1_W", 3L)));
  }

  @Test
  void executorPortSupplierRejectsBadPortsAndUsesTheBaseOutsideSpark() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new ExecutorPortSupplier(80));
    assertTrue(e.getMessage().contains("basePort = 80"), e.getMessage());
    assertEquals(40200, new ExecutorPortSupplier(40200).getPort());
  }
}
