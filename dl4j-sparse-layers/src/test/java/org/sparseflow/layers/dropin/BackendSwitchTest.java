package org.sparseflow.layers.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.sparseflow.ops.backend.SparseFlowBackend;

/**
 * SparseFlow's backend as a user sees it. ND4J picks its backend once per JVM, so each setting runs
 * {@link BackendProbeChild} in its own JVM: the default (SparseFlow's backend), {@code
 * -Dsparseflow.backend=stock} and {@code SPARSEFLOW_BACKEND=stock}. A stock DL4J model trains
 * bit-identically under all three; SparseFlow's SameDiff op matches the dense reference, and with
 * the backend switched off it is built as dense masked ND4J ops (said once at INFO); no WARN line
 * at start-up and none from SparseFlow at all.
 */
class BackendSwitchTest {

  private static final String CPU_BACKEND = "org.nd4j.linalg.cpu.nativecpu.CpuBackend";

  /** Output of one child JVM: its KEY value lines, and all its lines. */
  private record Child(Map<String, String> kv, List<String> lines, int exit, String out) {}

  private static Child run(String property, String env) throws Exception {
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-Xmx1g");
    cmd.add("-Dorg.bytedeco.javacpp.maxphysicalbytes=4G");
    if (property != null) {
      cmd.add("-Dsparseflow.backend=" + property);
    }
    cmd.add("-cp");
    cmd.add(cp);
    cmd.add(BackendProbeChild.class.getName());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("OMP_NUM_THREADS", "1");
    pb.environment().remove("SPARSEFLOW_BACKEND");
    if (env != null) {
      pb.environment().put("SPARSEFLOW_BACKEND", env);
    }
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(5, TimeUnit.MINUTES));
    Map<String, String> kv = new HashMap<>();
    List<String> lines = List.of(out.split("\n"));
    for (String line : lines) {
      int sp = line.indexOf(' ');
      if (sp > 0 && line.substring(0, sp).matches("[A-Z]+")) {
        kv.put(line.substring(0, sp), line.substring(sp + 1).trim());
      }
    }
    return new Child(kv, lines, p.exitValue(), out);
  }

  /** No WARN line before the stock model finished, and no WARN line from a SparseFlow logger. */
  private static void assertQuiet(Child c) {
    boolean stockDone = false;
    for (String line : c.lines()) {
      if (line.startsWith("STOCKDONE")) {
        stockDone = true;
      }
      if (line.contains(" WARN ")) {
        assertTrue(stockDone, "WARN at start-up:\n" + line + "\n---\n" + c.out());
        assertFalse(line.contains("org.sparseflow"), "WARN from SparseFlow:\n" + c.out());
      }
    }
  }

  @Test
  void stockTrainingIsBitIdenticalAndTheSwitchWorksByPropertyAndEnvironment() throws Exception {
    Child sf = run(null, null);
    Child byProperty = run("stock", null);
    Child byEnv = run(null, "stock");
    for (Child c : List.of(sf, byProperty, byEnv)) {
      assertEquals(0, c.exit(), c.out());
      assertQuiet(c);
      assertTrue(Double.parseDouble(c.kv().get("SDOUTDIFF")) < 1e-10, c.out());
      assertTrue(Double.parseDouble(c.kv().get("SDGRADDIFF")) < 1e-10, c.out());
    }
    assertEquals(SparseFlowBackend.class.getName(), sf.kv().get("BACKEND"));
    assertEquals("true", sf.kv().get("SDSPARSEOP"), "the Java op runs on SparseFlow's backend");
    assertEquals(
        1,
        sf.lines().stream()
            .filter(l -> l.contains("INFO") && l.contains("Switch off with"))
            .count(),
        "the replacement is announced once at INFO:\n" + sf.out());
    for (Child off : List.of(byProperty, byEnv)) {
      assertEquals(CPU_BACKEND, off.kv().get("BACKEND"), off.out());
      assertEquals("false", off.kv().get("SDSPARSEOP"), "dense masked ops without the backend");
      assertEquals(
          1,
          off.lines().stream()
              .filter(l -> l.contains("INFO") && l.contains("dense masked"))
              .count(),
          "the fallback is announced once at INFO:\n" + off.out());
    }
    assertEquals(sf.kv().get("PARAMS"), byProperty.kv().get("PARAMS"), "bit-identical training");
    assertEquals(sf.kv().get("PARAMS"), byEnv.kv().get("PARAMS"), "bit-identical training");
  }

  @Test
  void anUnknownBackendNameIsAClearError() throws Exception {
    Child bad = run("bogus", null);
    assertNotEquals(0, bad.exit(), bad.out());
    assertTrue(
        bad.out().contains("-Dsparseflow.backend=bogus is not a SparseFlow backend")
            && bad.out().contains("allowed: sparseflow, stock (or off), dataflow"),
        bad.out());
  }
}
