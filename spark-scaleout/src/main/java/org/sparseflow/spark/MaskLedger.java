package org.sparseflow.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Worker-side audit records written by {@link MaskGuardListener}, kept per JVM. In Spark local mode
 * and with ParallelWrapper the driver and all workers share the JVM, so the driver (and tests) can
 * read what every worker saw; on a cluster each executor keeps its own ledger, and {@link
 * MaskAudit} carries the same observations to the driver.
 */
public final class MaskLedger {

  /** What one worker saw after one iteration. */
  public static final class Observation implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Run id given to the listener. */
    public final String runId;

    /** Identity of the worker's model replica. */
    public final String worker;

    /** Spark executor id ("driver" in local mode; "local" outside Spark). */
    public final String executor;

    /** Topology version (interval index) the driver broadcast. */
    public final int version;

    public final int iteration;

    /** Nonzero weights outside the mask found before the listener re-applied the masks. */
    public final long violations;

    /** True when every mask digest equals the driver's for this version. */
    public final boolean masksMatchDriver;

    /** Digest of every mask, by weight name. */
    public final Map<String, Long> digests;

    /** Nodes in the gradient-sharing mesh this JVM belongs to (-1: no parameter server). */
    public final int meshNodes;

    /** Gradient updates this JVM received from peers since the listener started. */
    public final long peerUpdates;

    Observation(
        String runId,
        String worker,
        String executor,
        int version,
        int iteration,
        long violations,
        boolean match,
        Map<String, Long> digests,
        int meshNodes,
        long peerUpdates) {
      this.runId = runId;
      this.worker = worker;
      this.executor = executor;
      this.meshNodes = meshNodes;
      this.peerUpdates = peerUpdates;
      this.version = version;
      this.iteration = iteration;
      this.violations = violations;
      this.masksMatchDriver = match;
      this.digests = digests;
    }
  }

  private static final Map<String, List<Observation>> BY_RUN = new ConcurrentHashMap<>();

  private MaskLedger() {}

  static void record(Observation o) {
    BY_RUN.computeIfAbsent(o.runId, k -> new CopyOnWriteArrayList<>()).add(o);
  }

  /** All observations of a run, in arrival order. */
  public static List<Observation> observations(String runId) {
    List<Observation> l = BY_RUN.get(runId);
    return l == null ? Collections.emptyList() : new ArrayList<>(l);
  }

  public static void clear(String runId) {
    BY_RUN.remove(runId);
  }
}
