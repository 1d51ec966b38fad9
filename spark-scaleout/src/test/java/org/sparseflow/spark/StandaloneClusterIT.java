package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.spark.job.ClusterMstJob;

/**
 * Scale-out on a real multi-JVM Spark standalone cluster on 127.0.0.1: a master and two one-core
 * workers started with plain {@code java} by {@code scripts/local-spark-cluster.sh} (the script the
 * guide gives users), jobs sent with spark-submit and the shaded job jar, so every executor is its
 * own JVM. What the executors saw comes back through the {@link MaskAudit} accumulators in each
 * job's result file. Every process started here is stopped in {@link #stopCluster} (and by a
 * shutdown hook if the test JVM exits early).
 */
class StandaloneClusterIT {
  static final int WORKERS = 2;
  // MST intervals of the parameter-averaging run: warm-up, ultra-sparse and restoration phases all
  // occur, and it is deterministic (relDiff 0.023 against the single machine, 0.011 with 6
  // intervals). Gradient sharing is asynchronous and needs its 6 to end within 5 % of the single
  // machine (3 intervals ended 12 % above it); each of its intervals costs DL4J's parameter-server
  // and Aeron setup, about 17 s on the 2-core hosts.
  static final int INTERVALS = 4;
  static final int GS_INTERVALS = 6;
  static final int STOP_AFTER = 2;
  static final int DELTA_T = 10;
  static final long APP_TIMEOUT_S = 480;

  static Path dir;
  static Path script;
  static Path jobJar;
  static Path sparkClasspath;
  static Thread hook;

  @BeforeAll
  static void startCluster() throws Exception {
    script = Path.of(property("sparseflow.clusterScript"));
    jobJar = Path.of(property("sparseflow.jobJar"));
    sparkClasspath = Path.of(property("sparseflow.sparkClasspath"));
    dir = Path.of(property("sparseflow.clusterDir"));
    assertTrue(Files.isRegularFile(jobJar), "job jar missing: " + jobJar + " (run package)");
    System.out.println("RESULT spark-cluster jobJarBytes=" + Files.size(jobJar));
    run("stop"); // a cluster left over from a killed build
    deleteTree(dir);
    Files.createDirectories(dir);
    hook = new Thread(StandaloneClusterIT::stopQuietly);
    Runtime.getRuntime().addShutdownHook(hook);
    Process p = script("start", dir.toString(), Integer.toString(WORKERS)).start();
    if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
      p.destroyForcibly();
      fail("cluster did not start: " + Files.readString(dir.resolve("start.log")));
    }
  }

  @AfterAll
  static void stopCluster() throws Exception {
    if (hook != null) {
      Runtime.getRuntime().removeShutdownHook(hook);
    }
    run("stop");
  }

  @Test
  void parameterAveragingAcrossJvmsMatchesSingleMachineAndResumesInANewApplication()
      throws Exception {
    Path ckpt = dir.resolve("pa-ckpt");
    Path full = dir.resolve("pa-full.json");
    // application 1: the uninterrupted run and the single-machine reference, then the same run
    // again with checkpoints; it stops after STOP_AFTER intervals and is killed (SIGKILL) in the
    // middle of the application
    Process first =
        submit(
            "pa-kill",
            "--mode",
            "PARAM_AVG",
            "--reference",
            "--result",
            full.toString(),
            "--kill-test-checkpoint",
            ckpt.toString(),
            "--intervals",
            Integer.toString(INTERVALS),
            "--stop-after",
            Integer.toString(STOP_AFTER));
    waitForLine(first, dir.resolve("pa-kill.log"), ClusterMstJob.WAITING_MARKER);
    first.destroyForcibly();
    assertTrue(first.waitFor(60, TimeUnit.SECONDS), "the killed driver is gone");
    JsonNode a = json(full);
    double ref = a.get("referenceLoss").asDouble();
    double loss = a.get("loss").asDouble();
    double rel = Math.abs(loss - ref) / ref;
    System.out.println(
        "RESULT spark-cluster param-avg loss="
            + loss
            + " singleMachine="
            + ref
            + " relDiff="
            + rel);
    assertTrue(rel < 0.03, "cluster loss " + loss + " vs single machine " + ref);
    assertAudits(a, INTERVALS, 0);
    assertDriverLoggedAudits(dir.resolve("pa-kill.log"), INTERVALS);
    assertTrue(
        Files.isRegularFile(ckpt.resolve("model.zip")), "checkpoint written before the kill");

    // application 2: resume from the checkpoint
    Path resumed = dir.resolve("pa-resumed.json");
    Process second =
        submit(
            "pa-resume",
            "--mode",
            "PARAM_AVG",
            "--resume",
            ckpt.toString(),
            "--intervals",
            Integer.toString(INTERVALS),
            "--result",
            resumed.toString());
    assertExit(second, "pa-resume");
    JsonNode b = json(resumed);
    assertEquals(
        STOP_AFTER, b.get("firstInterval").asInt(), "resume continues after the checkpoint");
    assertAudits(b, INTERVALS, STOP_AFTER);
    assertEquals(a.get("step").asLong(), b.get("step").asLong());
    assertEquals(a.get("topologyUpdates").asLong(), b.get("topologyUpdates").asLong());
    assertEquals(a.get("rngState").asText(), b.get("rngState").asText(), "MST RNG state");
    assertEquals(
        a.get("finalMaskDigest").asText(), b.get("finalMaskDigest").asText(), "final topology");
    System.out.println(
        "RESULT spark-cluster resume fullLoss="
            + loss
            + " resumedLoss="
            + b.get("loss").asDouble());
    assertEquals(
        loss, b.get("loss").asDouble(), 1e-6 * loss, "resumed run ends where the full one does");
  }

  /**
   * What DL4J 1.0.0-M2's Aeron transport logs when a new mesh connection is not up within its fixed
   * 10 seconds (it happens on a heavily loaded host); the application then waits forever.
   */
  static final String TRANSPORT_GAVE_UP = "Can't establish connection afet 10 seconds";

  /**
   * Submits the gradient-sharing application as {@code name}, writing its result to {@code out}.
   */
  static Process submitGradientSharing(String name, Path out) throws IOException {
    return submit(
        name,
        "--mode",
        "GRAD_SHARE",
        "--intervals",
        Integer.toString(GS_INTERVALS),
        "--reference",
        "--transport-base-port",
        Integer.toString(freeUdpPorts(WORKERS + 1)),
        "--result",
        out.toString());
  }

  @Test
  void gradientSharingExchangesUpdatesBetweenExecutorJvms() throws Exception {
    Path out = dir.resolve("gs.json");
    String name = "gs";
    Process p = submitGradientSharing(name, out);
    if (transportGaveUp(p, dir.resolve(name + ".log"))) {
      // DL4J's transport, not SparseFlow, stopped this run (see TRANSPORT_GAVE_UP): one new try
      System.out.println(
          "NOTE spark-cluster grad-share: DL4J's Aeron transport did not connect within its fixed"
              + " 10 s (loaded host); submitting the application once more");
      name = "gs-again";
      p = submitGradientSharing(name, out);
    }
    assertExit(p, name);
    JsonNode r = json(out);
    assertAudits(r, GS_INTERVALS, 0);
    assertDriverLoggedAudits(dir.resolve(name + ".log"), GS_INTERVALS);
    Map<String, Long> received = new TreeMap<>();
    for (JsonNode interval : r.get("intervals")) {
      for (Iterator<Map.Entry<String, JsonNode>> it = interval.get("executors").fields();
          it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        assertEquals(
            WORKERS + 1,
            e.getValue().get("minMeshNodes").asInt(),
            "executor "
                + e.getKey()
                + " trained in a mesh of the root and both executors: "
                + interval);
        received.merge(e.getKey(), e.getValue().get("peerUpdates").asLong(), Long::sum);
      }
    }
    double loss = r.get("loss").asDouble();
    double ref = r.get("referenceLoss").asDouble();
    double initial = r.get("initialLoss").asDouble();
    System.out.println(
        "RESULT spark-cluster grad-share loss="
            + loss
            + " initialLoss="
            + initial
            + " singleMachine="
            + ref
            + " relDiff="
            + Math.abs(loss - ref) / ref
            + " peerUpdatesByExecutor="
            + received);
    assertEquals(WORKERS, received.size(), "both executors trained: " + received);
    for (Map.Entry<String, Long> e : received.entrySet()) {
      assertTrue(e.getValue() > 0, "executor " + e.getKey() + " never received a peer update");
    }
    assertTrue(loss < initial, "gradient sharing did not train: " + initial + " -> " + loss);
    // Gradient sharing is asynchronous, so a run's loss moves with the timing of the peer updates:
    // nine runs (docs/scale-out.md) ended 0.24 to 4.12 % from the single machine, mean 2.3 %. A
    // broken exchange ends about 88 % above it, so 5 % still tells the two apart without making CI
    // depend on machine load.
    assertTrue(
        Math.abs(loss - ref) / ref < 0.05,
        "gradient sharing loss " + loss + " vs single machine " + ref + " (allowed: within 5%)");
  }

  /**
   * Every interval from {@code first} of a run of {@code total}: both executors reported every
   * step, pruned weights exactly zero, masks equal to the driver's and to each other's.
   */
  static void assertAudits(JsonNode result, int total, int first) {
    JsonNode intervals = result.get("intervals");
    assertEquals(total - first, intervals.size(), "intervals run");
    for (JsonNode in : intervals) {
      assertEquals(0, in.get("driverViolations").asLong(), "driver-side leak " + in);
      JsonNode ex = in.get("executors");
      assertEquals(WORKERS, ex.size(), "executor JVMs that reported, interval " + in);
      Set<String> digests = new HashSet<>();
      for (JsonNode e : ex) {
        assertEquals(DELTA_T, e.get("observations").asLong(), "audited steps " + in);
        assertEquals(0, e.get("prunedNonZero").asLong(), "pruned weight nonzero " + in);
        assertEquals(0, e.get("maskMismatches").asLong(), "mask differs from driver's " + in);
        e.get("maskDigests").forEach(d -> digests.add(d.asText()));
      }
      assertEquals(1, digests.size(), "one topology on every executor, interval " + in);
    }
  }

  static void assertDriverLoggedAudits(Path log, int intervals) throws IOException {
    String text = Files.readString(log, StandardCharsets.UTF_8);
    for (int i = 0; i < intervals; i++) {
      assertTrue(
          text.contains("INFO SparkMstTrainer: MST interval " + i + " worker audit: executors=2"),
          "driver log has the audit line of interval " + i);
    }
  }

  static Process submit(String name, String... jobArgs) throws IOException {
    List<String> args = new ArrayList<>();
    args.add("submit");
    args.add(dir.toString());
    args.addAll(
        List.of(
            "--class",
            ClusterMstJob.class.getName(),
            "--total-executor-cores",
            Integer.toString(WORKERS),
            "--executor-cores",
            "1",
            "--executor-memory",
            "1g",
            "--conf",
            "spark.ui.enabled=false",
            jobJar.toString()));
    args.addAll(List.of(jobArgs));
    return script(args.toArray(new String[0]))
        .redirectOutput(dir.resolve(name + ".log").toFile())
        .start();
  }

  /**
   * Waits for the application; when its log shows that DL4J's transport gave up connecting, stops
   * it and returns true (it would hang until the timeout). Returns false when it ended or the
   * timeout passed (for {@link #assertExit} to report).
   */
  static boolean transportGaveUp(Process p, Path log) throws Exception {
    long deadline = System.currentTimeMillis() + APP_TIMEOUT_S * 1000;
    while (System.currentTimeMillis() < deadline && !p.waitFor(2, TimeUnit.SECONDS)) {
      if (Files.exists(log)
          && Files.readString(log, StandardCharsets.UTF_8).contains(TRANSPORT_GAVE_UP)) {
        p.destroyForcibly();
        p.waitFor(60, TimeUnit.SECONDS);
        return true;
      }
    }
    return false;
  }

  static void assertExit(Process p, String name) throws Exception {
    if (!p.waitFor(APP_TIMEOUT_S, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail(name + " did not finish in " + APP_TIMEOUT_S + " s; see " + dir.resolve(name + ".log"));
    }
    assertEquals(0, p.exitValue(), name + " failed; see " + dir.resolve(name + ".log"));
  }

  static void waitForLine(Process p, Path log, String marker) throws Exception {
    long deadline = System.currentTimeMillis() + APP_TIMEOUT_S * 1000;
    while (System.currentTimeMillis() < deadline) {
      if (Files.exists(log) && Files.readString(log, StandardCharsets.UTF_8).contains(marker)) {
        return;
      }
      if (!p.isAlive()) {
        fail("application ended (exit " + p.exitValue() + ") before '" + marker + "'; see " + log);
      }
      Thread.sleep(500);
    }
    p.destroyForcibly();
    fail("no '" + marker + "' in " + log + " after " + APP_TIMEOUT_S + " s");
  }

  /** A base port with {@code n} consecutive free UDP ports on 127.0.0.1. */
  static int freeUdpPorts(int n) {
    Random random = new Random();
    for (int attempt = 0; attempt < 50; attempt++) {
      int base = 42000 + random.nextInt(15000);
      List<DatagramSocket> held = new ArrayList<>();
      try {
        for (int i = 0; i < n; i++) {
          held.add(new DatagramSocket(base + i, InetAddress.getByName("127.0.0.1")));
        }
        return base;
      } catch (IOException e) {
        // taken; try another range
      } finally {
        held.forEach(DatagramSocket::close);
      }
    }
    throw new IllegalStateException("no " + n + " free consecutive UDP ports found");
  }

  static JsonNode json(Path p) throws IOException {
    return new ObjectMapper().readTree(p.toFile());
  }

  static ProcessBuilder script(String... args) {
    List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("SPARK_CLASSPATH_FILE", sparkClasspath.toString());
    if ("start".equals(args[0])) {
      pb.redirectOutput(dir.resolve("start.log").toFile());
    }
    return pb;
  }

  static void run(String command) throws Exception {
    if (!Files.isDirectory(dir)) {
      return;
    }
    Process p =
        script(command, dir.toString()).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
    }
  }

  static void stopQuietly() {
    try {
      run("stop");
    } catch (Exception e) {
      // JVM shutting down; nothing more to do
    }
  }

  static String property(String name) {
    String v = System.getProperty(name);
    if (v == null) {
      throw new IllegalStateException(
          "system property " + name + " is not set (failsafe sets it; see spark-scaleout/pom.xml)");
    }
    return v;
  }

  static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (var s = Files.walk(p)) {
      s.sorted((x, y) -> y.compareTo(x)).map(Path::toFile).forEach(File::delete);
    }
  }
}
