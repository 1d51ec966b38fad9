package org.sparseflow.mst;

import static org.sparseflow.mst.MstArrays.changedKeep;
import static org.sparseflow.mst.MstArrays.rowMajor;
import static org.sparseflow.mst.MstArrays.toArray;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.GradientUpdater;
import org.nd4j.linalg.learning.config.Adam;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.TopologyUpdater;

/**
 * MST for a SameDiff graph: {@code opExecution} of "&lt;W&gt;-grad" captures the dense gradient,
 * {@code preUpdate} masks and scales the update, {@code iterationDone} accounts the step and
 * applies mask changes (weights named by the config's include/exclude regexes; rank-2 trainable
 * variables, [nIn, nOut]).
 */
final class SameDiffAdapter {
  private static final Logger LOG = LoggerFactory.getLogger(SameDiffAdapter.class);

  private final MstListener owner;
  private final MstCore core;
  private final UpdateScaler scaler;
  private final Map<String, float[]> capturedGrads = new HashMap<>();
  private Map<String, INDArray> masks;
  private SameDiff attached;
  private SameDiffSparseOps sparseOps;
  private boolean warnedNoUpdaters;
  private PackedSameDiffWeights packed;

  SameDiffAdapter(MstListener owner, UpdateScaler scaler) {
    this.owner = owner;
    this.core = owner.core();
    this.scaler = scaler;
  }

  /** The graph the listener was added to (needed to reach its optimizer state). */
  void attach(SameDiff sd) {
    attached = sd;
  }

  void bind(SameDiff sd) {
    if (masks != null) {
      sparseOps.refresh();
      return;
    }
    // the graph holding the SparseFlow ops: the one the listener was added to (sd may be
    // SameDiff's gradient function)
    SameDiff graph = attached != null ? attached : sd;
    packed = PackedSameDiffWeights.of(graph, core);
    sparseOps = SameDiffSparseOps.of(graph);
    masks = new LinkedHashMap<>();
    Map<String, float[]> w = new LinkedHashMap<>();
    selectedWeights(sd, core.config(), packed::isPackedVariable)
        .forEach((name, a) -> w.put(name, rowMajor(a)));
    if (!packed.isEmpty()) {
      bindPacked(sd, w.keySet());
      return;
    }
    for (Map.Entry<String, float[]> e : w.entrySet()) {
      INDArray a = sd.getArrForVarName(e.getKey());
      core.register(e.getKey(), (int) a.size(0), (int) a.size(1));
    }
    owner.initializeOrRestore(w);
    int sparse = 0;
    for (String name : w.keySet()) {
      INDArray a = sd.getArrForVarName(name);
      LayerMask m = core.masks().get(name);
      INDArray mask = toArray(m.toElementMask(), m.rows(), m.cols(), a.dataType());
      masks.put(name, mask);
      a.muli(mask);
      if (sparseOps.hasWeight(name)) {
        sparseOps.checkPattern(name, m.pattern());
        sparseOps.setMask(name, m, mask);
        sparse++;
      }
    }
    LOG.info(
        "MST bound {} SameDiff variables ({} on sparse matmul ops, {} sparse attention ops): {}",
        masks.size(),
        sparse,
        sparseOps.attentionLayers(),
        core.snapshotRecord().layerDensity);
    bindAttention();
  }

  /**
   * The weights MST drives in {@code sd}, in the graph's variable order (the order MST registers
   * them in, and so draws their first masks in): trainable rank-2 variables the config selects,
   * except those {@code skip} names; name -> its array [nIn, nOut].
   */
  static Map<String, INDArray> selectedWeights(
      SameDiff sd, MstConfig config, Predicate<String> skip) {
    Map<String, INDArray> w = new LinkedHashMap<>();
    for (SDVariable v : sd.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE
          && v.getArr() != null
          && v.getArr().rank() == 2
          && config.selects(v.name())
          && !skip.test(v.name())) {
        w.put(v.name(), v.getArr());
      }
    }
    return w;
  }

  /**
   * The first masks a fresh core with {@code config} draws for {@code sd} (see bind); the weights
   * are copied only when the first masks are by magnitude.
   */
  static Map<String, LayerMask> firstMasks(MstConfig config, SameDiff sd) {
    MstCore fresh = new MstCore(config);
    boolean magnitude = config.getInitialMask() == InitialMask.MAGNITUDE;
    Map<String, float[]> values = magnitude ? new LinkedHashMap<>() : null;
    for (Map.Entry<String, INDArray> e : selectedWeights(sd, config, name -> false).entrySet()) {
      INDArray a = e.getValue();
      fresh.register(e.getKey(), (int) a.size(0), (int) a.size(1));
      if (magnitude) {
        values.put(e.getKey(), rowMajor(a));
      }
    }
    return fresh.initialize(values);
  }

  private void bindAttention() {
    sparseOps.setDenseWeightGrad(core.needsDenseGradient(core.step()));
    if (!owner.hasAttentionApplier() && sparseOps.attentionLayers() > 0) {
      owner.attention(sparseOps.attentionLayers(), sparseOps::setPattern);
    }
    sparseOps.refresh();
    owner.applyAttention();
  }

  /**
   * Packed storage: MST drives the packed weights by their layouts (see {@link
   * PackedSameDiffWeights}); every weight the config selects must be packed.
   */
  private void bindPacked(SameDiff sd, Set<String> masked) {
    if (!masked.isEmpty()) {
      throw new IllegalArgumentException(
          "MST config selects packed weights and masked ones "
              + masked
              + "; allowed: one storage for all selected weights (narrow 'include' or rewrite the"
              + " graph with one storage)");
    }
    packed.bind(core, owner::restorePending);
    // before the first step SameDiff has no updater state yet (nothing to move, nothing to warn of)
    packed.apply(
        null, attached != null ? attached.getUpdaterMap() : sd.getUpdaterMap(), core, core.step());
    LOG.info(
        "MST bound {} packed SameDiff weights ({} sparse attention ops): {}",
        core.layers().size(),
        sparseOps.attentionLayers(),
        core.snapshotRecord().layerDensity);
    bindAttention();
  }

  /** The graph's optimizer state per variable (null when SameDiff does not expose it). */
  @SuppressWarnings("rawtypes")
  private Map<String, GradientUpdater> updaters(SameDiff sd) {
    Map<String, GradientUpdater> u =
        attached != null ? attached.getUpdaterMap() : sd.getUpdaterMap();
    if (u == null && !warnedNoUpdaters) {
      warnedNoUpdaters = true;
      LOG.warn(
          "MST cannot reach the SameDiff updater state, so optimizer moments of regrown weights"
              + " are not reset; register the listener with MstListener.addTo(sd)");
    }
    return u;
  }

  /** Before step core.step(): the dense weight gradient only on steps whose growth needs it. */
  void iterationStart(SameDiff sd) {
    bind(sd);
    sparseOps.setDenseWeightGrad(core.needsDenseGradient(core.step()));
    if (!packed.isEmpty()) {
      packed.collectGrowthScores(core.needsDenseGradient(core.step()));
    }
  }

  /** The SparseFlow ops driven by this adapter (null before the first bind). */
  SameDiffSparseOps sparseOps() {
    return sparseOps;
  }

  void opExecution(SameDiffOp op, INDArray[] outputs) {
    if (masks == null || !core.isTopologyStep(core.step())) {
      return;
    }
    List<String> outs = op.getOutputsOfOp();
    for (int i = 0; outs != null && i < outs.size() && i < outputs.length; i++) {
      String o = outs.get(i);
      if (o.endsWith("-grad")) {
        String var = o.substring(0, o.length() - 5);
        if (masks.containsKey(var)) {
          capturedGrads.put(var, rowMajor(outputs[i]));
        }
      }
    }
  }

  void preUpdate(SameDiff sd, String name, INDArray update) {
    String layer = packed == null ? null : packed.layerOf(name);
    if (layer != null) {
      scaler.scalePackedStep(layer, update, betas(sd), u -> packed.slotOf(layer, u));
      return;
    }
    INDArray m = masks == null ? null : masks.get(name);
    if (m == null) {
      return;
    }
    update.muli(m);
    scaler.scaleStep(name, update, betas(sd));
  }

  /** Adam's β1, β2 (for the reset bias correction), or null for other updaters. */
  private static double[] betas(SameDiff sd) {
    return sd.getTrainingConfig().getUpdater() instanceof Adam a
        ? new double[] {a.getBeta1(), a.getBeta2()}
        : null;
  }

  void iterationDone(SameDiff sd, double loss) {
    bind(sd);
    long t = core.step();
    core.stepDone(t, loss);
    if (!packed.isEmpty()) {
      Map<String, TopologyUpdater.Result> res =
          core.isMaskStep(t)
              ? core.updateMasksFromScores(
                  t, packed.weightScores(), core.needsDenseGradient(t) ? packed.gradScores() : null)
              : null;
      packed.apply(res, updaters(sd), core, t + 1);
      owner.applyAttention();
      return;
    }
    if (core.isMaskStep(t)) {
      Map<String, float[]> w = new HashMap<>();
      for (String name : masks.keySet()) {
        w.put(name, rowMajor(sd.getArrForVarName(name)));
      }
      Map<String, TopologyUpdater.Result> res =
          core.updateMasks(t, w, capturedGrads.isEmpty() ? null : capturedGrads);
      // listeners may receive SameDiff's internal gradient instance, whose updater map is null;
      // ND4J declares the map with the raw GradientUpdater type
      @SuppressWarnings("rawtypes")
      Map<String, GradientUpdater> updaters = updaters(sd);
      for (Map.Entry<String, INDArray> e : masks.entrySet()) {
        TopologyUpdater.Result r = res.get(e.getKey());
        if (r.pruned == 0 && r.grown == 0) {
          continue;
        }
        INDArray a = sd.getArrForVarName(e.getKey());
        e.getValue()
            .assign(toArray(r.mask.toElementMask(), r.mask.rows(), r.mask.cols(), a.dataType()));
        INDArray keep = changedKeep(r, a.dataType());
        a.muli(keep).muli(e.getValue());
        if (sparseOps.hasWeight(e.getKey())) {
          sparseOps.setMask(e.getKey(), r.mask, e.getValue());
        }
        GradientUpdater<?> gu = updaters == null ? null : updaters.get(e.getKey());
        if (gu != null && gu.getState() != null) {
          for (INDArray s : gu.getState().values()) {
            s.muli(keep.reshape(s.shape()).castTo(s.dataType()));
          }
        }
      }
      capturedGrads.clear();
    }
    owner.applyAttention();
  }
}
