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
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.nn.SparseAttentionLayer;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.mst.dl4j.Dl4jWeights;
import org.sparseflow.ops.packed.PackedLayout;

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
  private PackedDl4jWeights packed; // the selected packed weights (empty for masked storage)
  private Model packedModel; // the model whose packed weights MST drives (replaced by rebuilds)
  private boolean ownAttentionApplier; // the attention applier is this adapter's (on the model)
  private boolean warnedNoUpdate; // update scaling found no update for a bound weight

  Dl4jAdapter(MstListener owner, UpdateScaler scaler) {
    this.owner = owner;
    this.core = owner.core();
    this.scaler = scaler;
  }

  /**
   * The masks a fresh core with {@code config} draws for the weights of {@code model} it selects.
   */
  static Map<String, LayerMask> firstMasks(MstConfig config, Model model) {
    MstCore fresh = new MstCore(config);
    boolean magnitude = config.getInitialMask() == InitialMask.MAGNITUDE;
    Map<String, float[]> values = new LinkedHashMap<>();
    PackedDl4jWeights packed = PackedDl4jWeights.of(model, fresh);
    if (!packed.isEmpty()) {
      PackedLayouts.register(fresh, packed.layouts());
      values = magnitude ? packed.denseValues() : values;
    } else {
      for (Dl4jWeights.Binding b : Dl4jWeights.find(model, config)) {
        fresh.register(b.name, b.rows, b.cols);
        if (magnitude) {
          values.put(b.name, rowMajor(b.weight));
        }
      }
    }
    return fresh.initialize(magnitude ? values : null);
  }

  void bind(Model model) {
    if (bindings != null) {
      return;
    }
    packed = PackedDl4jWeights.of(model, core);
    bindings = Dl4jWeights.find(model, core.config());
    if (!packed.isEmpty()) {
      packedModel = model;
      bindPacked(model);
      return;
    }
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
    bindAttention(model);
    LOG.info(
        "MST bound {} weights of {}: {}",
        bindings.size(),
        model.getClass().getSimpleName(),
        core.snapshotRecord().layerDensity);
    owner.applyAttention();
  }

  /** Drives the model's switchable attention layers, unless the caller gave its own applier. */
  private void bindAttention(Model model) {
    if (owner.hasAttentionApplier() && !ownAttentionApplier) {
      return;
    }
    List<SparseAttentionLayer> att = SparseParams.attentionLayers(model);
    if (!att.isEmpty()) {
      owner.attention(att.size(), (i, p) -> att.get(i).setAttentionPattern(p));
      ownAttentionApplier = true;
    }
  }

  /**
   * Packed storage: MST drives the packed weights by their layouts (see {@link PackedDl4jWeights});
   * every weight the config selects must be packed.
   */
  private void bindPacked(Model model) {
    if (!bindings.isEmpty()) {
      throw new IllegalArgumentException(
          "MST config selects packed weights "
              + packed.names()
              + " and masked or stock ones "
              + bindings.stream().map(b -> b.name).toList()
              + "; allowed: one storage for all selected weights (narrow 'include' or build the"
              + " layers with one storage)");
    }
    PackedLayouts.bind(
        core,
        packed.layouts(),
        owner::restorePending,
        packed::denseValues,
        "pack every block for a dense warm-up (density = 1 with storage = packed)");
    packed.apply(null, core, core.step());
    packed.collectGrowthScores(core.needsDenseGradient(core.step()));
    bindAttention(model);
    LOG.info(
        "MST bound {} packed weights of {}: {}",
        core.layers().size(),
        model.getClass().getSimpleName(),
        core.snapshotRecord().layerDensity);
    owner.applyAttention();
  }

  /**
   * The model to train from the next step on: {@code model}, or a copy rebuilt with the block slots
   * a new phase wants for its packed weights (see {@link PackedDl4jWeights}).
   */
  Model nextModel(Model model) {
    if (packed == null || !packed.wantsRebuild()) {
      return model;
    }
    long t0 = System.nanoTime();
    checkPackedModel(model);
    PackedDl4jWeights.Rebuilt r = packed.rebuild(model, core);
    packed = r.weights();
    packedModel = r.model();
    packed.collectGrowthScores(core.needsDenseGradient(core.step()));
    if (ownAttentionApplier) {
      bindAttention(r.model());
      owner.reapplyAttention();
    }
    Map<String, Integer> slots = new LinkedHashMap<>();
    for (String name : packed.names()) {
      slots.put(name, packed.weight(name).slots());
    }
    LOG.info(
        "MST rebuilt the model at step {} in {} ms for the new phase's block slots {}",
        core.step(),
        (System.nanoTime() - t0) / 1_000_000,
        slots);
    return r.model();
  }

  void onGradientCalculation(Model model) {
    bind(model);
    if (!packed.isEmpty()) {
      checkPackedModel(model);
      checkNoWaitingLayout();
      return; // packed gradients cover the kept blocks only
    }
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

  /** Refuses to drive a model other than the one MST's packed weights belong to. */
  private void checkPackedModel(Model model) {
    if (model != packedModel) {
      throw new IllegalStateException(
          "MST drives the packed weights of the model MstListener.nextModel returned last; this"
              + " is another one (an older model MST has replaced?); allowed: train the model"
              + " nextModel returned, or a new MstListener for another model");
    }
  }

  /**
   * Refuses a step on a packed layout that MST has already replaced by one that needs a rebuild.
   */
  private void checkNoWaitingLayout() {
    Map<String, PackedLayout> waiting = packed.waitingLayouts();
    if (!waiting.isEmpty()) {
      String name = waiting.keySet().iterator().next();
      throw new IllegalStateException(
          "MST grew packed weight '"
              + name
              + "' to "
              + waiting.get(name).keptBlocks()
              + " blocks, more than its "
              + packed.weight(name).slots()
              + " block slots, so the model must be rebuilt before the next step; allowed: call"
              + " model = mst.nextModel(model) after each fit call (MstListener.nextModel), or"
              + " storage = masked");
    }
  }

  void iterationDone(Model model) {
    bind(model);
    if (!packed.isEmpty()) {
      iterationDonePacked(model);
      return;
    }
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

  private void iterationDonePacked(Model model) {
    scalePackedUpdates(model);
    long t = core.step();
    core.stepDone(t, model.score());
    Map<String, TopologyUpdater.Result> res =
        core.isMaskStep(t)
            ? core.updateMasksFromScores(
                t, packed.weightScores(), core.needsDenseGradient(t) ? packed.gradScores() : null)
            : null;
    packed.apply(res, core, t + 1);
    packed.collectGrowthScores(core.needsDenseGradient(core.step()));
    owner.applyAttention();
  }

  /** As {@link #scaleUpdates} for packed weights, block slot by block slot. */
  private void scalePackedUpdates(Model model) {
    if (!scaler.active() || model.gradient() == null) {
      return;
    }
    boolean correct = core.config().isResetBiasCorrection();
    for (String name : packed.names()) {
      INDArray u = model.gradient().gradientForVariable().get(name);
      if (u == null) {
        continue;
      }
      scaler.correctAppliedPackedStep(
          name,
          packed.weight(name).packedValues(),
          u,
          correct ? packed.adamBetas(name) : null,
          unit -> packed.slotOf(name, unit));
    }
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
