package org.sparseflow.bench.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The memory-cap demonstration's parsing, validation and outcome reporting (no timings). */
class MemoryCapDemoTest {

  @Test
  void sizesParseLikeJvmOptions() {
    assertEquals(512L << 20, MemoryCapDemo.bytes("--heap", "512m"));
    assertEquals(4L << 30, MemoryCapDemo.bytes("--cap", "4G"));
    assertEquals(1000L, MemoryCapDemo.bytes("--cap", "1000"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> MemoryCapDemo.bytes("--cap", "4gb"));
    assertTrue(e.getMessage().contains("--cap = 4gb"), e.getMessage());
  }

  @Test
  void badOptionsNameTheOptionAndTheRule() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MemoryCapDemo.main(new String[] {"--heap", "2g", "--cap", "1g"}));
    assertTrue(e.getMessage().contains("--cap = 1g"), e.getMessage());
    assertTrue(e.getMessage().contains("larger than --heap"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MemoryCapDemo.main(new String[] {"--sparsity", "1"}));
    assertTrue(e.getMessage().contains("--sparsity = 1.0"), e.getMessage());
  }

  @Test
  void outOfMemoryIsFoundInTheCauseChain() {
    OutOfMemoryError oom = new OutOfMemoryError("cap");
    RuntimeException wrapped = new RuntimeException("op failed", new IllegalStateException(oom));
    assertSame(oom, CappedTraining.oomIn(wrapped));
    assertNull(CappedTraining.oomIn(new RuntimeException("other")));
  }

  @Test
  void aRunThatFitsReportsEveryStepAndItsOutcomeRoundTrips() {
    MemoryCase.Size size = new MemoryCase.Size("custom", 32, 1, 2, 16, 2);
    CappedTraining.Outcome o = CappedTraining.run(size, "packed", "block16", 0.25, 2, 1);
    Map<String, String> r = CappedTraining.Outcome.parse(o.format());
    assertEquals("trained", r.get("status"));
    assertEquals("2", r.get("steps_done"));
    assertTrue(Long.parseLong(r.get("peak_rss_mb")) > 0, r.toString());
    assertEquals(o.values, r);
  }
}
