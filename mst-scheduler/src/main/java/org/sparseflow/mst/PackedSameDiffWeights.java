package org.sparseflow.mst;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.samediff.BasePackedMatmulOp;
import org.sparseflow.ops.samediff.PackedMatmulBpOp;
import org.sparseflow.ops.samediff.PackedMatmulOp;

/**
 * MST on SameDiff weights in packed storage ({@code <W>_packed} variables read by {@link
 * PackedMatmulOp}): the masks are the ops' kept-block layouts, and MST changes them by index.
 *
 * <ul>
 *   <li>Pruning ranks the kept blocks by the L2 norm of their packed values; gradient growth ranks
 *       the other blocks by the norm of the dense gradient, which the backward ops add up one block
 *       row at a time on growth steps ({@link PackedMatmulBpOp#setGrowthScores}), so no dense
 *       weight or gradient array exists.
 *   <li>At a mask change the packed values and every optimizer state array are moved to the new
 *       layout: kept blocks keep theirs, grown blocks start at zero (MST's reset), pruned blocks
 *       leave the arrays, and the ops (graph and gradient function) get the new layout.
 *   <li>Capacity: each packed variable holds the largest block count its layer reaches in the
 *       current phase of the schedule, so the arrays are reallocated only when a phase begins (or
 *       if a layer ever outgrows its capacity); the slots after the kept blocks are zero.
 * </ul>
 *
 * <p>The MST layer name of a packed weight is its original variable name (without {@code _packed}),
 * in the x·W orientation of the packed op.
 */
final class PackedSameDiffWeights {

  private static final String SUFFIX = "_packed";

  /** One packed weight: its variable and current layout. */
  private static final class Weight {
    final String variable;
    PackedLayout layout;
    int capacity; // block slots of the variable's array

    Weight(String variable, PackedLayout layout, int capacity) {
      this.variable = variable;
      this.layout = layout;
      this.capacity = capacity;
    }
  }

  private final SameDiff graph;
  private final Map<String, Weight> weights = new LinkedHashMap<>();
  private final Map<String, double[]> growthSquares = new LinkedHashMap<>();
  private final PackedLayouts capacities = new PackedLayouts();
  private boolean sinksSet; // whether the backward ops currently hold growth-score sinks

  private PackedSameDiffWeights(SameDiff graph) {
    this.graph = graph;
  }

  /**
   * The packed weights of {@code graph} that {@code core}'s config selects (may be none), in the
   * graph's order of their packed variables (Sparsify creates them in the dense weights' order,
   * which is the order a masked run registers, and so draws, its first masks in).
   */
  static PackedSameDiffWeights of(SameDiff graph, MstCore core) {
    PackedSameDiffWeights p = new PackedSameDiffWeights(graph);
    for (SameDiffOp op : graph.getOps().values()) {
      if (!(op.getOp() instanceof PackedMatmulOp m)) {
        continue;
      }
      String var = op.getInputsToOp().get(1);
      String name = var.endsWith(SUFFIX) ? var.substring(0, var.length() - SUFFIX.length()) : var;
      if (!core.config().selects(name)) {
        continue;
      }
      Weight prev = p.weights.get(name);
      if (prev != null && !prev.layout.equals(m.layout())) {
        throw new IllegalArgumentException(
            "packed weight '"
                + var
                + "' is read by ops with two layouts; MST needs one per weight");
      }
      int b = m.layout().blockSize();
      int slots = (int) (graph.getArrForVarName(var).length() / ((long) b * b));
      p.weights.put(name, new Weight(var, m.layout(), slots));
    }
    PackedSameDiffWeights ordered = new PackedSameDiffWeights(graph);
    for (String v : graph.getVariables().keySet()) {
      String layer = p.layerOf(v);
      if (layer != null) {
        ordered.weights.put(layer, p.weights.get(layer));
      }
    }
    return ordered;
  }

  boolean isEmpty() {
    return weights.isEmpty();
  }

  /** Whether {@code variable} is one of the packed variables MST drives. */
  boolean isPackedVariable(String variable) {
    return layerOf(variable) != null;
  }

  /** The MST layer name of a packed variable, or null. */
  String layerOf(String variable) {
    for (Map.Entry<String, Weight> e : weights.entrySet()) {
      if (e.getValue().variable.equals(variable)) {
        return e.getKey();
      }
    }
    return null;
  }

  /**
   * Binds the packed weights to {@code core} in the packed ops' orientation: checks them against
   * the state {@code restore} restores, or starts MST from them (see {@link PackedLayouts#bind}).
   */
  void bind(MstCore core, BooleanSupplier restore) {
    PackedLayouts.bind(
        core,
        layouts(),
        restore,
        this::denseValues,
        "pack at MST's first masks (Sparsify.apply(cfg, sd, MstListener.firstMasks(config, sd)),"
            + " as train --storage packed does)");
  }

  /** The current layout of every weight, by MST layer name. */
  private Map<String, PackedLayout> layouts() {
    Map<String, PackedLayout> out = new LinkedHashMap<>();
    weights.forEach((k, w) -> out.put(k, w.layout));
    return out;
  }

  /** Each weight as dense row-major [rows, cols] values, zero outside its kept blocks. */
  Map<String, float[]> denseValues() {
    Map<String, float[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, Weight> e : weights.entrySet()) {
      PackedLayout l = e.getValue().layout;
      INDArray values =
          PackedBlockLinear.leadingBlocks(
              graph.getArrForVarName(e.getValue().variable), l.keptBlocks(), l.blockSize());
      out.put(e.getKey(), MstArrays.rowMajor(PackedBlockLinear.unpack(values, l)));
    }
    return out;
  }

  /** Per layer: the L2 norm of each kept block's values (0 for the other blocks). */
  Map<String, double[]> weightScores() {
    Map<String, double[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, Weight> e : weights.entrySet()) {
      Weight w = e.getValue();
      PackedLayout l = w.layout;
      INDArray values =
          PackedBlockLinear.leadingBlocks(
              graph.getArrForVarName(w.variable), l.keptBlocks(), l.blockSize());
      out.put(e.getKey(), PackedLayouts.blockNorms(values, l));
    }
    return out;
  }

  /**
   * Turns the backward ops' dense-gradient block scores on (fresh zeroed sums) for a growth step,
   * or off.
   */
  void collectGrowthScores(boolean on) {
    if (!on && growthSquares.isEmpty() && !sinksSet) {
      return; // nothing to switch off: no walk over the ops on ordinary steps
    }
    sinksSet = on;
    growthSquares.clear();
    for (SameDiff sd : instances()) {
      for (SameDiffOp op : sd.getOps().values()) {
        if (op.getOp() instanceof PackedMatmulBpOp bp && op.getInputsToOp().size() > 1) {
          String layer = layerOf(op.getInputsToOp().get(1));
          if (layer == null) {
            continue;
          }
          double[] sink = null;
          if (on) {
            PackedLayout l = weights.get(layer).layout;
            sink =
                growthSquares.computeIfAbsent(
                    layer, k -> new double[l.blockRows() * l.blockCols()]);
          }
          bp.setGrowthScores(sink);
        }
      }
    }
  }

  /** The dense-gradient L2 norm per block of every layer, from the last growth step. */
  Map<String, double[]> gradScores() {
    return PackedLayouts.norms(growthSquares);
  }

  /** Packed slot of block {@code unit} of {@code layer} (-1 when not kept). */
  int slotOf(String layer, int unit) {
    return weights.get(layer).layout.slotOf(unit);
  }

  /**
   * Moves every changed layer to its new mask (values, optimizer state, ops), then fits each
   * layer's capacity to the phase of step {@code next}.
   */
  @SuppressWarnings("rawtypes")
  void apply(
      Map<String, TopologyUpdater.Result> res,
      Map<String, GradientUpdater> updaters,
      MstCore core,
      long next) {
    Map<String, Integer> capacity = capacities.capacities(core, next, this::layouts);
    for (Map.Entry<String, Weight> e : weights.entrySet()) {
      Weight w = e.getValue();
      TopologyUpdater.Result r = res == null ? null : res.get(e.getKey());
      PackedLayout to = w.layout;
      if (r != null && (r.pruned > 0 || r.grown > 0)) {
        to = PackedLayouts.layoutOf(r.mask, w.layout.blockSize());
      }
      int cap = Math.max(to.keptBlocks(), capacity == null ? w.capacity : capacity.get(e.getKey()));
      if (to != w.layout || cap != w.capacity) {
        move(w, to, cap, updaters == null ? null : updaters.get(w.variable));
      }
    }
  }

  /** Moves one weight to layout {@code to} with {@code cap} block slots. */
  private void move(Weight w, PackedLayout to, int cap, GradientUpdater<?> updater) {
    INDArray now = graph.getArrForVarName(w.variable);
    INDArray values = PackedBlockLinear.relayout(now, w.layout, to, cap);
    if (cap == w.capacity) {
      now.assign(values.reshape(now.shape()));
    } else {
      for (SameDiff sd : instances()) {
        if (sd.hasVariable(w.variable)) {
          sd.getVariable(w.variable).setArray(values);
        }
      }
    }
    if (updater != null && updater.getState() != null && !updater.getState().isEmpty()) {
      Map<String, INDArray> moved = new LinkedHashMap<>();
      for (Map.Entry<String, INDArray> st : updater.getState().entrySet()) {
        moved.put(st.getKey(), PackedBlockLinear.relayout(st.getValue(), w.layout, to, cap));
      }
      if (cap != w.capacity) {
        long n = (long) cap * to.blockSize() * to.blockSize();
        INDArray view = Nd4j.zeros(now.dataType(), 1, updater.getConfig().stateSize(n));
        updater.setStateViewArray(view, values.shape(), 'c', true);
      }
      for (Map.Entry<String, INDArray> st : updater.getState().entrySet()) {
        st.getValue().assign(moved.get(st.getKey()).reshape(st.getValue().shape()));
      }
    }
    w.layout = to;
    w.capacity = cap;
    pushLayout(w);
  }

  private void pushLayout(Weight w) {
    for (SameDiff sd : instances()) {
      for (SameDiffOp op : sd.getOps().values()) {
        DifferentialFunction f = op.getOp();
        List<String> in = op.getInputsToOp();
        if (in == null || in.size() < 2 || !in.get(1).equals(w.variable)) {
          continue;
        }
        if (f instanceof BasePackedMatmulOp m) {
          m.setLayout(w.layout); // forward and backward op alike
        }
      }
    }
  }

  private List<SameDiff> instances() {
    List<SameDiff> out = new ArrayList<>();
    out.add(graph);
    SameDiff g = graph.getFunction(SameDiffSparseOps.GRAD_FUNCTION);
    if (g != null && g != graph) {
      out.add(g);
    }
    return out;
  }
}
