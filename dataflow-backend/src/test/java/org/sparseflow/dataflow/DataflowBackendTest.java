package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.sparseflow.dataflow.backend.DataflowBackend;

/**
 * The backend is chosen when ND4J initialises, so each configuration runs in its own child JVM.
 * Asserts bit-identical parameters with and without the dataflow backend, and that the recorded
 * iteration simulates. The fit times are printed (recording overhead), never asserted.
 */
class DataflowBackendTest {

  private static Map<String, String> runChild(boolean dataflow, int iterations) throws Exception {
    return runChild(dataflow, DlTrainingChild.class.getName(), Integer.toString(iterations));
  }

  private static Map<String, String> runChild(boolean dataflow, String mainClass, String arg)
      throws Exception {
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-Xmx1g");
    cmd.add("-Dorg.bytedeco.javacpp.maxphysicalbytes=4G");
    cmd.add("-Dorg.nd4j.log.initialization=false");
    if (dataflow) {
      cmd.add("-Dsparseflow.backend=dataflow");
    }
    cmd.add("-cp");
    cmd.add(cp);
    cmd.add(mainClass);
    cmd.add(arg);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("OMP_NUM_THREADS", "1");
    pb.environment().remove("SPARSEFLOW_BACKEND");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(5, TimeUnit.MINUTES));
    assertEquals(0, p.exitValue(), out);
    Map<String, String> kv = new HashMap<>();
    for (String line : out.split("\n")) {
      int sp = line.indexOf(' ');
      if (sp > 0 && line.substring(0, sp).matches("[A-Z]+")) {
        kv.put(line.substring(0, sp), line.substring(sp + 1).trim());
      }
    }
    assertTrue(kv.containsKey("BACKEND"), out);
    return kv;
  }

  @Test
  void trainingIsBitIdenticalWithTheDataflowBackendAndTheTraceSimulates() throws Exception {
    int iterations = 30;
    Map<String, String> plain = runChild(false, iterations);
    Map<String, String> df = runChild(true, iterations);
    assertNotEquals(
        DataflowBackend.class.getName(),
        plain.get("BACKEND"),
        "dataflow backend must be invisible unless asked for");
    assertEquals(DataflowBackend.class.getName(), df.get("BACKEND"));
    assertEquals(plain.get("PARAMS"), df.get("PARAMS"), "parameters must be bit-identical");
    assertEquals("0", plain.get("RECORDED"));
    int recorded = Integer.parseInt(df.get("RECORDED"));
    assertTrue(
        recorded >= 10, "one iteration of a 3-layer MLP runs tens of ops, recorded " + recorded);
    assertTrue(Integer.parseInt(df.get("MATMULS")) >= 3, "forward matmuls are visible: " + df);
    assertTrue(Double.parseDouble(df.get("SIMSTEP")) > 0);
    double perIterationMs = Double.parseDouble(plain.get("FITMS")) / (iterations - 1);
    double recordMsPerIteration = Double.parseDouble(df.get("RECORDNS")) * recorded / 1e6;
    System.out.println(
        String.format(
            Locale.ROOT,
            "RESULT dataflow recording-overhead iterations=%d fit_ms_plain=%s fit_ms_dataflow=%s "
                + "ops_per_iteration=%d record_ns_per_op=%s overhead_pct=%.2f measured=true",
            iterations - 1,
            plain.get("FITMS"),
            df.get("FITMS"),
            recorded,
            df.get("RECORDNS"),
            100 * recordMsPerIteration / perIterationMs));
  }

  @Test
  void sparseFlowJavaOpsRunUnderTheBackendAndCarryTheirMaskDensity() throws Exception {
    Map<String, String> plain = runChild(false, SparseOpChild.class.getName(), "0");
    Map<String, String> df = runChild(true, SparseOpChild.class.getName(), "0");
    assertEquals(plain.get("OUTSUM"), df.get("OUTSUM"), "same result with and without recording");
    String sparse = df.get("SPARSEOP");
    assertTrue(
        sparse.startsWith("sparseflow_sparse_matmul density=0.2500 pattern=block16"), sparse);
    // 8 x 64 x 32 matmul at density 0.25: 2 * 8 * 64 * 32 * 0.25 FLOPs
    assertEquals(2.0 * 8 * 64 * 32 * 0.25, Double.parseDouble(df.get("SPARSEFLOPS")), 1e-6);
    assertEquals("none", plain.get("SPARSEOP"));
  }
}
