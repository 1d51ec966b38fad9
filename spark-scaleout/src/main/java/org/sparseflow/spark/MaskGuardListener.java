package org.sparseflow.spark;

import java.io.Serializable;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.optimize.api.BaseTrainingListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs on every worker replica (Spark task model, ParallelWrapper trainer): after each optimizer
 * step it checks that W is exactly zero outside M and that M is the topology the driver broadcast
 * for this interval, records the result in the {@link MaskLedger}, then re-applies W = W o M (a
 * no-op when nothing leaked).
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

  /**
   * @param runId key under which observations are recorded
   * @param version topology version (interval index) broadcast by the driver
   * @param expectedDigests driver's mask digests by weight name ({@link MaskedWeights#digest})
   * @param auditEvery audit every n-th iteration (masks are re-applied every iteration regardless);
   *     >= 1
   */
  public MaskGuardListener(
      String runId, int version, Map<String, Long> expectedDigests, int auditEvery) {
    if (auditEvery < 1) {
      throw new IllegalArgumentException(
          "auditEvery = " + auditEvery + " is invalid; allowed: an integer >= 1");
    }
    this.runId = runId;
    this.version = version;
    this.expectedDigests = new HashMap<>(expectedDigests);
    this.auditEvery = auditEvery;
  }

  public int version() {
    return version;
  }

  @Override
  public void iterationDone(Model model, int iteration, int epoch) {
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
      MaskLedger.record(
          new MaskLedger.Observation(runId, worker, version, iteration, viol, match, digests));
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
}
