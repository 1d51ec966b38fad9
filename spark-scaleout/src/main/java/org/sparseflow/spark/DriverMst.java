package org.sparseflow.spark;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.mst.MstArrays;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.mst.dl4j.Dl4jWeights;

/**
 * The single MST decision maker of a distributed run. It lives on the driver and drives an {@link
 * MstCore} (the same core the single-machine {@link MstListener} uses) against the driver's
 * network, which after every interval holds the averaged (parameter averaging) or accumulated
 * (gradient sharing) parameters. Topology updates are applied to the driver's network — masks
 * written into the layers' mask params, regrown and pruned weights zeroed, their optimizer state
 * reset — and reach the workers with the next broadcast of the parameters.
 *
 * <p>Workers never run MST themselves, so there is exactly one decision per update interval for all
 * workers.
 */
public final class DriverMst {
  private static final Logger LOG = LoggerFactory.getLogger(DriverMst.class);

  private final MstListener holder;
  private final MstCore core;
  private MstState pendingRestore;
  private List<Dl4jWeights.Binding> bindings;
  private Model bound;

  /** Fresh run; {@code config} must have its total steps set ({@link MstConfig#withTotalSteps}). */
  public DriverMst(MstConfig config) {
    this.holder = new MstListener(config.validate());
    this.core = holder.core();
  }

  /** Resumes from a state saved with a checkpoint. */
  public static DriverMst resume(MstState state) {
    DriverMst d = new DriverMst(MstConfig.fromJson(state.getConfig()));
    d.pendingRestore = state;
    return d;
  }

  public MstCore core() {
    return core;
  }

  /**
   * The listener object whose state is the driver's (for {@code MstCheckpoint.save}); not attached
   * to any model.
   */
  public MstListener stateHolder() {
    return holder;
  }

  public MstState state() {
    return core.state();
  }

  public int deltaT() {
    return core.config().getDeltaT();
  }

  public long totalSteps() {
    return core.config().getSchedule().getTotalSteps();
  }

  /**
   * Binds the driver network: registers its sparse weights, creates (or restores) the masks and
   * writes them into the network, so the first broadcast already carries them. Every selected
   * weight must have a mask param.
   */
  public void bind(Model net) {
    if (bound == net) {
      return;
    }
    bindings = Dl4jWeights.find(net, core.config());
    if (bindings.isEmpty()) {
      throw new IllegalArgumentException(
          "net has no weights selected by the MST config (include "
              + core.config().getInclude()
              + ", exclude "
              + core.config().getExclude()
              + "); allowed: a model with SparseFlow sparse layers (Sparsify.apply)");
    }
    for (Dl4jWeights.Binding b : bindings) {
      if (b.maskParam == null) {
        throw new IllegalArgumentException(
            "weight "
                + b.name
                + " has no mask param; allowed for scale-out: SparseFlow sparse layers"
                + " (SparseDenseLayer, SparseOutputLayer, ...) whose mask param travels with the"
                + " parameters to every worker");
      }
    }
    boolean fresh = core.masks().isEmpty();
    if (fresh) {
      Map<String, float[]> w = new LinkedHashMap<>();
      for (Dl4jWeights.Binding b : bindings) {
        core.register(b.name, b.rows, b.cols);
        w.put(b.name, MstArrays.rowMajor(b.weight));
      }
      if (pendingRestore != null) {
        core.restore(pendingRestore);
        pendingRestore = null;
      } else {
        core.initialize(w);
      }
    }
    for (Dl4jWeights.Binding b : bindings) {
      INDArray m =
          MstArrays.toArray(
              core.masks().get(b.name).toElementMask(), b.rows, b.cols, b.weight.dataType());
      b.mask.assign(m);
      b.maskParam.assign(m);
      b.weight.muli(m);
      b.requestDense(false);
    }
    bound = net;
    LOG.info(
        "driver MST bound {} weights, step {}: {}",
        bindings.size(),
        core.step(),
        core.snapshotRecord().layerDensity);
  }

  /** True when the interval ending after step {@code lastStep} is followed by a topology update. */
  public boolean topologyUpdateAfter(long lastStep) {
    return core.isTopologyStep(lastStep);
  }

  /** True when the grow mode needs dense gradients. */
  public boolean needsGradients() {
    switch (core.config().getGrowMode()) {
      case GRADIENT:
      case MIXED:
        return true;
      default:
        return false;
    }
  }

  /** Outcome of one interval on the driver. */
  public static final class IntervalResult {
    public final long stepAfter;
    public final boolean topologyUpdated;
    public final long pruned;
    public final long grown;
    public final double globalDensity;

    IntervalResult(
        long stepAfter, boolean topologyUpdated, long pruned, long grown, double globalDensity) {
      this.stepAfter = stepAfter;
      this.topologyUpdated = topologyUpdated;
      this.pruned = pruned;
      this.grown = grown;
      this.globalDensity = globalDensity;
    }

    @Override
    public String toString() {
      return "step="
          + stepAfter
          + " topologyUpdated="
          + topologyUpdated
          + " pruned="
          + pruned
          + " grown="
          + grown
          + " density="
          + globalDensity;
    }
  }

  /**
   * Accounts {@code steps} finished worker steps (one synchronous data-parallel step each) and,
   * when the last of them is a topology step, runs the one topology update for all workers on the
   * driver's network.
   *
   * @param score training score reported for the interval
   * @param gradients supplies the aggregated dense gradients (called only when an update needs
   *     them)
   */
  public IntervalResult intervalDone(
      Model net, int steps, double score, Supplier<Map<String, float[]>> gradients) {
    if (bound != net) {
      throw new IllegalStateException(
          "intervalDone on a network that was not bound; call bind(net) first");
    }
    long pruned = 0;
    long grown = 0;
    boolean updated = false;
    for (int i = 0; i < steps; i++) {
      long t = core.step();
      if (t >= totalSteps()) {
        break;
      }
      core.stepDone(t, score);
      if (core.isTopologyStep(t)) {
        if (i != steps - 1) {
          throw new IllegalStateException(
              "topology step "
                  + t
                  + " falls inside an interval; intervals "
                  + "must be "
                  + deltaT()
                  + " steps (the MST deltaT)");
        }
        Map<String, float[]> w = new HashMap<>();
        for (Dl4jWeights.Binding b : bindings) {
          w.put(b.name, MstArrays.rowMajor(b.weight));
        }
        Map<String, float[]> g = needsGradients() ? gradients.get() : null;
        Map<String, TopologyUpdater.Result> res = core.updateTopology(t, w, g);
        for (Dl4jWeights.Binding b : bindings) {
          TopologyUpdater.Result r = res.get(b.name);
          INDArray m =
              MstArrays.toArray(r.mask.toElementMask(), b.rows, b.cols, b.weight.dataType());
          b.mask.assign(m);
          b.maskParam.assign(m);
          INDArray keep = MstArrays.changedKeep(r, b.weight.dataType());
          b.weight.muli(keep); // regrown weights start at zero, as in the single-machine listener
          Dl4jWeights.scaleUpdaterState(net, b, keep);
          pruned += r.pruned;
          grown += r.grown;
        }
        updated = true;
      }
    }
    for (Dl4jWeights.Binding b : bindings) {
      b.weight.muli(b.mask);
    }
    double dens = core.snapshotRecord().globalDensity;
    return new IntervalResult(core.step(), updated, pruned, grown, dens);
  }

  /** Driver's mask digests by weight name (what every worker must see). */
  public Map<String, Long> digests() {
    Map<String, Long> out = new LinkedHashMap<>();
    for (Dl4jWeights.Binding b : bindings) {
      out.put(b.name, MaskedWeights.digest(b.maskParam));
    }
    return out;
  }

  /** Current MST masks by name. */
  public Map<String, LayerMask> masks() {
    return core.masks();
  }
}
