package org.sparseflow.mst;

import static org.sparseflow.mst.MstArrays.changedKeep;
import static org.sparseflow.mst.MstArrays.rowMajor;
import static org.sparseflow.mst.MstArrays.toArray;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.nn.SparseAttentionLayer;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.mst.dl4j.Dl4jWeights;

/**
 * MST for a DL4J MultiLayerNetwork / ComputationGraph (DL4J 1.0.0-M2.1 call order, checked by the
 * listener tests): {@code onGradientCalculation} reads the raw dense gradient on topology steps and
 * masks the gradient before the updater; {@code iterationDone} (after params -= update) scales the
 * applied step, re-masks the weights, accounts FLOPs and, on mask steps, applies the new masks,
 * zeroes regrown weights and resets their optimizer state (Adam m/v, momentum), also at pruned
 * positions.
 */
final class Dl4jAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(Dl4jAdapter.class);

  private final MstListener owner;
  private final MstCore core;
  private final UpdateScaler scaler;
  private final Map<String, float[]> capturedGrads = new HashMap<>();
  private List<Dl4jWeights.Binding> bindings;
  private boolean warnedNoUpdate; // update scaling found no update for a bound weight

  Dl4jAdapter(MstListener owner, UpdateScaler scaler) {
    this.owner = owner;
    this.core = owner.core();
    this.scaler = scaler;
  }

  void bind(Model model) {
    if (bindings != null) {
      return;
    }
    bindings = Dl4jWeights.find(model, core.config());
    Map<String, float[]> w = new LinkedHashMap<>();
    for (Dl4jWeights.Binding b : bindings) {
      core.register(b.name, b.rows, b.cols);
      w.put(b.name, rowMajor(b.weight));
    }
    owner.initializeOrRestore(w);
    for (Dl4jWeights.Binding b : bindings) {
      LayerMask m = core.masks().get(b.name);
      b.mask.assign(toArray(m.toElementMask(), b.rows, b.cols, b.mask.dataType()));
      b.weight.muli(b.mask);
      if (b.maskParam != null) {
        b.maskParam.assign(b.mask);
      }
      b.requestDense(core.isTopologyStep(core.step()));
    }
    if (!owner.hasAttentionApplier()) {
      List<SparseAttentionLayer> att = SparseParams.attentionLayers(model);
      if (!att.isEmpty()) {
        owner.attention(att.size(), (i, p) -> att.get(i).setAttentionPattern(p));
      }
    }
    LOG.info(
        "MST bound {} weights of {}: {}",
        bindings.size(),
        model.getClass().getSimpleName(),
        core.snapshotRecord().layerDensity);
    owner.applyAttention();
  }

  void onGradientCalculation(Model model) {
    bind(model);
    boolean topo = core.isTopologyStep(core.step());
    for (Dl4jWeights.Binding b : bindings) {
      if (topo) {
        INDArray g = b.denseGradient(model);
        if (g != null) {
          capturedGrads.put(b.name, rowMajor(g));
        }
      }
      b.maskGradient(model);
    }
  }

  void iterationDone(Model model) {
    bind(model);
    scaleUpdates(model);
    long t = core.step();
    core.stepDone(t, model.score());
    if (core.isMaskStep(t)) {
      Map<String, float[]> w = new HashMap<>();
      for (Dl4jWeights.Binding b : bindings) {
        w.put(b.name, rowMajor(b.weight));
      }
      Map<String, TopologyUpdater.Result> res =
          core.updateMasks(t, w, capturedGrads.isEmpty() ? null : capturedGrads);
      for (Dl4jWeights.Binding b : bindings) {
        TopologyUpdater.Result r = res.get(b.name);
        if (r.pruned == 0 && r.grown == 0) {
          continue;
        }
        INDArray newMask = toArray(r.mask.toElementMask(), b.rows, b.cols, b.mask.dataType());
        b.mask.assign(newMask);
        if (b.maskParam != null) {
          b.maskParam.assign(newMask);
        }
        INDArray keep = changedKeep(r, b.mask.dataType());
        b.weight.muli(keep); // regrown weights start at exactly zero
        Dl4jWeights.scaleUpdaterState(model, b, keep);
      }
      capturedGrads.clear();
    }
    for (Dl4jWeights.Binding b : bindings) {
      // SparseFlow layers re-mask their weights themselves (applyConstraints, which DL4J runs right
      // after the listeners on every optimizer step); stock layers are masked here
      if (b.maskParam == null) {
        b.weight.muli(b.mask);
      }
      b.requestDense(core.isTopologyStep(core.step()));
    }
    owner.applyAttention();
  }

  /**
   * DL4J's updater writes the update into the gradient view and the step function subtracts it; at
   * iterationDone that view still holds the update u, which {@link UpdateScaler} rescales.
   */
  private void scaleUpdates(Model model) {
    if (!scaler.active() || model.gradient() == null) {
      return;
    }
    boolean correct = core.config().isResetBiasCorrection();
    for (Dl4jWeights.Binding b : bindings) {
      INDArray u = model.gradient().gradientForVariable().get(b.name);
      if (u == null) {
        if (!warnedNoUpdate) {
          warnedNoUpdate = true;
          LOG.warn("MST update scaling: no update found for {}; it is trained unscaled", b.name);
        }
        continue;
      }
      scaler.correctAppliedStep(b.name, b.weight, u, correct ? b.adamBetas() : null);
    }
  }
}
