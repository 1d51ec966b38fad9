package org.sparseflow.spark;

import java.io.Serializable;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkEnv;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.optimize.api.BaseTrainingListener;
import org.nd4j.linalg.api.buffer.DataType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs on every worker replica (Spark task model, ParallelWrapper trainer): after each optimizer
 * step it checks that W is exactly zero outside M and that M is the topology the driver broadcast
 * for this interval, records the result in the {@link MaskLedger}, then re-applies W = W o M (a
 * no-op when nothing leaked). With a {@link MaskAudit} the observations also reach the driver from
 * executors in other JVMs.
 *
 * <p>Serializable: dl4j-spark ships listeners to the executors inside the training function.
 */
public final class MaskGuardListener extends BaseTrainingListener implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(MaskGuardListener.class);

  private final String runId;
  private final int version;
  private final HashMap<String, Long> expectedDigests;
  private final int auditEvery;
  private final MaskAudit audit;
  private int expectedMeshNodes;
  private boolean collectParams;
  private long peerTimeoutMs = 60_000;
  private transient Long peerUpdatesAtStart;
  private transient boolean peersAwaited;

  /**
   * @param runId key under which observations are recorded
   * @param version topology version (interval index) broadcast by the driver
   * @param expectedDigests driver's mask digests by weight name ({@link MaskedWeights#digest})
   * @param auditEvery audit every n-th iteration (masks are re-applied every iteration regardless);
   *     >= 1
   */
  public MaskGuardListener(
      String runId, int version, Map<String, Long> expectedDigests, int auditEvery) {
    this(runId, version, expectedDigests, auditEvery, null);
  }

  /**
   * @param audit accumulator registered on the driver that receives every observation (null: the
   *     per-JVM {@link MaskLedger} only)
   */
  public MaskGuardListener(
      String runId,
      int version,
      Map<String, Long> expectedDigests,
      int auditEvery,
      MaskAudit audit) {
    if (auditEvery < 1) {
      throw new IllegalArgumentException(
          "auditEvery = " + auditEvery + " is invalid; allowed: an integer >= 1");
    }
    this.runId = runId;
    this.version = version;
    this.expectedDigests = new HashMap<>(expectedDigests);
    this.auditEvery = auditEvery;
    this.audit = audit;
  }

  public int version() {
    return version;
  }

  /**
   * Gradient sharing on a cluster: before its first step every executor waits until the
   * parameter-server mesh it broadcasts to holds {@code nodes} nodes (the driver's root and one per
   * training executor), and fails after {@code timeoutMs}. dl4j-spark M2 lets an executor train as
   * soon as it has joined the root, so without this an early executor can finish a short interval
   * before its peers join and train alone. 0 disables the wait (parameter averaging, local mode).
   */
  public MaskGuardListener awaitMesh(int nodes, long timeoutMs) {
    this.expectedMeshNodes = nodes;
    this.peerTimeoutMs = timeoutMs;
    return this;
  }

  /**
   * Sends the worker's parameters after each audited step to the driver with the audit (gradient
   * sharing: the driver adopts the executors' parameters after the interval).
   */
  public MaskGuardListener collectParams(boolean collect) {
    this.collectParams = collect;
    return this;
  }

  @Override
  public void onEpochStart(Model model) {
    awaitPeers();
  }

  private void awaitPeers() {
    if (peersAwaited
        || expectedMeshNodes <= 0
        || !executorId().chars().allMatch(Character::isDigit)) {
      return;
    }
    peersAwaited = true;
    long deadline = System.currentTimeMillis() + peerTimeoutMs;
    int nodes = GradientSharingProbe.meshNodes();
    while (nodes < expectedMeshNodes) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException(
            "gradient sharing: executor "
                + executorId()
                + " sees "
                + nodes
                + " of "
                + expectedMeshNodes
                + " mesh nodes after "
                + peerTimeoutMs
                + " ms; its peers did not join (each executor needs its own UDP port, see"
                + " ExecutorPortSupplier, and the ports must be open between the hosts)");
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for gradient-sharing peers", e);
      }
      nodes = GradientSharingProbe.meshNodes();
    }
    LOG.info(
        "gradient sharing: executor {} sees {} mesh nodes (expected {}), training starts",
        executorId(),
        nodes,
        expectedMeshNodes);
  }

  @Override
  public void iterationDone(Model model, int iteration, int epoch) {
    awaitPeers();
    List<MaskedWeights.Ref> refs = MaskedWeights.find(model);
    if (iteration % auditEvery == 0) {
      long viol = 0;
      boolean match = true;
      Map<String, Long> digests = new LinkedHashMap<>();
      for (MaskedWeights.Ref r : refs) {
        viol += MaskedWeights.violations(r);
        long d = MaskedWeights.digest(r.mask());
        digests.put(r.name, d);
        Long want = expectedDigests.get(r.name);
        match &= want != null && want == d;
      }
      String worker =
          Thread.currentThread().getName()
              + "#"
              + Integer.toHexString(System.identityHashCode(model));
      int meshNodes = GradientSharingProbe.meshNodes();
      if (peerUpdatesAtStart == null) {
        peerUpdatesAtStart = GradientSharingProbe.received();
      }
      MaskLedger.Observation o =
          new MaskLedger.Observation(
              runId,
              worker,
              executorId(),
              version,
              iteration,
              viol,
              match,
              digests,
              meshNodes,
              GradientSharingProbe.received() - peerUpdatesAtStart);
      MaskLedger.record(o);
      if (audit != null) {
        audit.add(o);
        if (collectParams) {
          audit.addParams(
              o.executor, iteration, model.params().castTo(DataType.FLOAT).dup().data().asFloat());
        }
      }
      if (viol > 0 || !match) {
        LOG.warn(
            "worker {} iteration {} (topology version {}): {} nonzero pruned weights, masks match"
                + " driver: {}",
            worker,
            iteration,
            version,
            viol,
            match);
      }
    }
    for (MaskedWeights.Ref r : refs) {
      r.layer.applyMasks();
    }
  }

  /** Spark executor id, or "local" outside Spark (ParallelWrapper without spark-core). */
  static String executorId() {
    try {
      SparkEnv env = SparkEnv.get();
      return env == null ? "local" : env.executorId();
    } catch (NoClassDefFoundError e) {
      return "local";
    }
  }
}
