package org.sparseflow.dataflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.dataflow.backend.DataflowBackend;
import org.sparseflow.ops.backend.SparseFlowBackend;

/**
 * SparseFlow's registered backends on a classpath without nd4j-native (a CUDA user's): ND4J's
 * {@code Nd4jBackend.load()} stops its ServiceLoader loop at the first provider that fails to load,
 * so both must load, report themselves unusable, and leave the GPU backend (a stand-in here) to be
 * chosen.
 */
class NoNativeClasspathTest {

  @TempDir Path tmp;

  private String runWithoutNative(boolean withGpu) throws Exception {
    String cp =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> kept =
        Stream.of(cp.split(File.pathSeparator))
            .filter(e -> !e.contains("nd4j-native") && !e.contains("openblas"))
            .collect(Collectors.toList());
    assertTrue(
        kept.size() < cp.split(File.pathSeparator).length, "nd4j-native was on the test classpath");
    if (withGpu) {
      Path services = tmp.resolve("META-INF/services");
      Files.createDirectories(services);
      Files.writeString(
          services.resolve("org.nd4j.linalg.factory.Nd4jBackend"),
          FakeGpuBackend.class.getName() + "\n");
      kept.add(0, tmp.toString());
    }
    List<String> cmd = new ArrayList<>();
    cmd.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    cmd.add("-Xmx512m");
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, kept));
    cmd.add(DiscoveryChild.class.getName());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().remove("SPARSEFLOW_BACKEND");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(2, TimeUnit.MINUTES));
    assertEquals(0, p.exitValue(), out);
    return out;
  }

  @Test
  void bothBackendsLoadAndStepAsideSoTheGpuBackendIsChosen() throws Exception {
    String out = runWithoutNative(true);
    assertTrue(out.contains("NATIVE false"), out);
    assertFalse(out.contains("BROKEN"), out);
    assertTrue(out.contains("PROVIDER " + SparseFlowBackend.class.getName() + " -100 false"), out);
    assertTrue(out.contains("PROVIDER " + DataflowBackend.class.getName() + " -100 false"), out);
    assertTrue(out.contains("LOADED " + FakeGpuBackend.class.getName()), out);
    assertFalse(out.contains("WARN"), "no WARN line when the GPU backend is chosen:\n" + out);
  }

  @Test
  void withNoBackendAtAllNd4jSaysSoInsteadOfALinkageError() throws Exception {
    String out = runWithoutNative(false);
    assertFalse(out.contains("BROKEN"), out);
    assertTrue(out.contains("NOBACKEND"), out);
  }
}
