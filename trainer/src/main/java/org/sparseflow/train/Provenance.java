package org.sparseflow.train;

import java.io.IOException;
import java.io.InputStream;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Where and with what a run was made, recorded in {@code summary.json} (no git needed): SparseFlow,
 * DL4J and Java versions, the ND4J backend, OS, CPU count and the time.
 */
public final class Provenance {

  private Provenance() {}

  public static Map<String, Object> collect() {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("sparseflow_version", mavenVersion("org.sparseflow", "trainer", "0.1.0"));
    p.put("dl4j_version", mavenVersion("org.deeplearning4j", "deeplearning4j-nn", "unknown"));
    p.put("nd4j_version", mavenVersion("org.nd4j", "nd4j-api", "unknown"));
    p.put("java_version", System.getProperty("java.version"));
    p.put("java_vendor", System.getProperty("java.vendor"));
    p.put(
        "os",
        System.getProperty("os.name")
            + " "
            + System.getProperty("os.version")
            + " "
            + System.getProperty("os.arch"));
    p.put("cpu_cores", Runtime.getRuntime().availableProcessors());
    try {
      p.put("nd4j_backend", Nd4j.getBackend().getClass().getName());
      p.put("nd4j_executioner", Nd4j.getExecutioner().getClass().getName());
    } catch (RuntimeException | LinkageError e) {
      p.put("nd4j_backend", "unavailable: " + e.getMessage());
    }
    p.put("created_at", Instant.now().toString());
    return p;
  }

  /**
   * Version from the pom.properties Maven puts in every jar; {@code fallback} when running from
   * classes.
   */
  public static String mavenVersion(String group, String artifact, String fallback) {
    String res = "/META-INF/maven/" + group + "/" + artifact + "/pom.properties";
    try (InputStream in = Provenance.class.getResourceAsStream(res)) {
      if (in != null) {
        Properties props = new Properties();
        props.load(in);
        return props.getProperty("version", fallback);
      }
    } catch (IOException ignored) {
      // fall through
    }
    return fallback;
  }
}
