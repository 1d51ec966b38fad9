package org.sparseflow.spark;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.util.AccumulatorV2;

/**
 * Spark accumulator that carries the workers' mask audits ({@link MaskGuardListener}) from every
 * executor JVM back to the driver, one instance per MST interval. The per-JVM {@link MaskLedger}
 * only reaches the driver in local mode; an accumulator is merged by Spark from every successful
 * task wherever it ran.
 */
public final class MaskAudit extends AccumulatorV2<MaskLedger.Observation, MaskAudit.Summary> {
  private static final long serialVersionUID = 1L;

  /** What one executor reported during one interval. */
  public static final class ExecutorAudit implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Audited optimizer steps. */
    public long observations;

    /** Nonzero weights outside the mask, summed over the audited steps. */
    public long prunedNonZero;

    /** Audited steps whose masks differed from the driver's. */
    public long maskMismatches;

    /** Distinct combined mask digests seen (one when the topology was the same on every step). */
    public final TreeSet<Long> maskDigests = new TreeSet<>();

    /** Gradient sharing: fewest / most nodes in the parameter-server mesh (-1: no mesh). */
    public int minMeshNodes = Integer.MAX_VALUE;

    public int maxMeshNodes = -1;

    /** Gradient sharing: most update messages received from peers during the interval. */
    public long peerUpdates;

    /** Gradient sharing: the executor's parameters after its last audited step (else null). */
    public float[] lastParams;

    /** Iteration of {@link #lastParams}. */
    public int lastParamsIteration = -1;

    void add(MaskLedger.Observation o) {
      observations++;
      prunedNonZero += o.violations;
      if (!o.masksMatchDriver) {
        maskMismatches++;
      }
      maskDigests.add(MaskedWeights.combined(o.digests));
      minMeshNodes = Math.min(minMeshNodes, o.meshNodes);
      maxMeshNodes = Math.max(maxMeshNodes, o.meshNodes);
      peerUpdates = Math.max(peerUpdates, o.peerUpdates);
    }

    void merge(ExecutorAudit other) {
      observations += other.observations;
      prunedNonZero += other.prunedNonZero;
      maskMismatches += other.maskMismatches;
      maskDigests.addAll(other.maskDigests);
      minMeshNodes = Math.min(minMeshNodes, other.minMeshNodes);
      maxMeshNodes = Math.max(maxMeshNodes, other.maxMeshNodes);
      peerUpdates = Math.max(peerUpdates, other.peerUpdates);
      if (other.lastParamsIteration > lastParamsIteration) {
        lastParams = other.lastParams;
        lastParamsIteration = other.lastParamsIteration;
      }
    }

    ExecutorAudit copy() {
      ExecutorAudit c = new ExecutorAudit();
      c.merge(this);
      return c;
    }

    @Override
    public String toString() {
      return "{steps="
          + observations
          + " prunedNonZero="
          + prunedNonZero
          + " maskMismatches="
          + maskMismatches
          + " maskDigests="
          + hex(maskDigests)
          + (maxMeshNodes >= 0
              ? " meshNodes=" + minMeshNodes + ".." + maxMeshNodes + " peerUpdates=" + peerUpdates
              : "")
          + "}";
    }
  }

  /** Everything the executors reported during one interval, by executor id. */
  public static final class Summary implements Serializable {
    private static final long serialVersionUID = 1L;

    public final TreeMap<String, ExecutorAudit> byExecutor = new TreeMap<>();

    public long observations() {
      return byExecutor.values().stream().mapToLong(e -> e.observations).sum();
    }

    public long prunedNonZero() {
      return byExecutor.values().stream().mapToLong(e -> e.prunedNonZero).sum();
    }

    public long maskMismatches() {
      return byExecutor.values().stream().mapToLong(e -> e.maskMismatches).sum();
    }

    /** Distinct combined mask digests over all executors (1 when every executor agreed). */
    public TreeSet<Long> maskDigests() {
      TreeSet<Long> all = new TreeSet<>();
      byExecutor.values().forEach(e -> all.addAll(e.maskDigests));
      return all;
    }

    /** A deep copy (the accumulator's value keeps changing while tasks still report). */
    public Summary copy() {
      Summary s = new Summary();
      byExecutor.forEach((k, v) -> s.byExecutor.put(k, v.copy()));
      return s;
    }

    @Override
    public String toString() {
      return "executors="
          + byExecutor.size()
          + " steps="
          + observations()
          + " prunedNonZero="
          + prunedNonZero()
          + " maskMismatches="
          + maskMismatches()
          + " maskDigests="
          + hex(maskDigests())
          + " "
          + byExecutor;
    }
  }

  private Summary summary = new Summary();

  @Override
  public boolean isZero() {
    return summary.byExecutor.isEmpty();
  }

  @Override
  public AccumulatorV2<MaskLedger.Observation, Summary> copy() {
    MaskAudit c = new MaskAudit();
    c.summary = summary.copy();
    return c;
  }

  @Override
  public void reset() {
    summary = new Summary();
  }

  @Override
  public void add(MaskLedger.Observation o) {
    summary.byExecutor.computeIfAbsent(o.executor, k -> new ExecutorAudit()).add(o);
  }

  @Override
  public void merge(AccumulatorV2<MaskLedger.Observation, Summary> other) {
    for (Map.Entry<String, ExecutorAudit> e : other.value().byExecutor.entrySet()) {
      summary.byExecutor.computeIfAbsent(e.getKey(), k -> new ExecutorAudit()).merge(e.getValue());
    }
  }

  /** Keeps the executor's parameters of its latest step (gradient sharing, see SparkMstTrainer). */
  public void addParams(String executor, int iteration, float[] params) {
    ExecutorAudit a = summary.byExecutor.computeIfAbsent(executor, k -> new ExecutorAudit());
    if (iteration > a.lastParamsIteration) {
      a.lastParams = params;
      a.lastParamsIteration = iteration;
    }
  }

  @Override
  public Summary value() {
    return summary;
  }

  static String hex(TreeSet<Long> digests) {
    StringBuilder b = new StringBuilder("[");
    for (Long d : digests) {
      b.append(b.length() > 1 ? "," : "").append(Long.toHexString(d));
    }
    return b.append(']').toString();
  }
}
