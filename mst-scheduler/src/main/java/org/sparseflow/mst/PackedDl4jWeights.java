package org.sparseflow.mst;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.deeplearning4j.nn.api.Model;
import org.sparseflow.layers.api.PackedModels;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.mst.dl4j.Dl4jWeights;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * MST on DL4J weights in packed storage ({@code storage = packed} SparseFlow layers, reached
 * through {@link PackedSparseParam}): the masks are the layers' kept-block layouts, and MST changes
 * them by index.
 *
 * <ul>
 *   <li>Pruning ranks the kept blocks by the L2 norm of their packed values; gradient growth ranks
 *       the other blocks by the norm of the dense gradient, which the layers' backward adds up one
 *       block row at a time on growth steps ({@link PackedSparseParam#setGrowthScores}), so no
 *       dense weight or gradient array exists.
 *   <li>A mask change moves the values and optimizer state in place ({@link
 *       PackedSparseParam#relayout}): kept blocks keep theirs, grown blocks start at zero (MST's
 *       reset), pruned blocks leave the arrays.
 *   <li>Capacity: each weight has block slots for the most blocks its layer reaches in the current
 *       phase of the schedule. DL4J fixes a network's parameter count when it is built, so a new
 *       phase's capacity is a rebuilt network ({@link PackedModels#withSlots}), made when the
 *       training loop asks for it ({@link MstListener#nextModel}). Until then a phase that prunes
 *       keeps its larger arrays; a grown layout that does not fit waits for the rebuild, and
 *       training on without it is refused.
 * </ul>
 */
final class PackedDl4jWeights {

  private final Map<String, PackedSparseParam> weights = new LinkedHashMap<>();
  private final Map<String, double[]> growthSquares = new LinkedHashMap<>();
  private final Map<String, double[]> betas = new HashMap<>();
  private final PackedLayouts capacities;
  private final Map<String, Integer> pendingSlots = new LinkedHashMap<>();
  private final Map<String, PackedLayout> pendingLayouts = new LinkedHashMap<>();
  private boolean collecting;

  private PackedDl4jWeights(PackedLayouts capacities) {
    this.capacities = capacities;
  }

  /**
   * The packed block weights of {@code model} that {@code core}'s config selects, in layer order.
   */
  static PackedDl4jWeights of(Model model, MstCore core) {
    return of(model, core, new PackedLayouts());
  }

  private static PackedDl4jWeights of(Model model, MstCore core, PackedLayouts capacities) {
    PackedDl4jWeights p = new PackedDl4jWeights(capacities);
    for (PackedSparseParam w : SparseParams.findPacked(model)) {
      if (!core.config().selects(w.name())) {
        continue;
      }
      if (w.layout() == null) {
        throw new IllegalArgumentException(
            "MST config selects '"
                + w.name()
                + "', which is packed with an n:m pattern; allowed: MST on packed block patterns,"
                + " or n:m with storage = masked");
      }
      if (w.slots() == 0) {
        throw new IllegalArgumentException(
            "MST config selects '"
                + w.name()
                + "', whose packed layout cannot change ("
                + w.modelLayer().getClass().getSimpleName()
                + "); allowed: packed SparseDenseLayer / SparseOutputLayer weights, or storage ="
                + " masked");
      }
      p.weights.put(w.name(), w);
    }
    return p;
  }

  boolean isEmpty() {
    return weights.isEmpty();
  }

  /** The current layout of every weight, by MST layer name. */
  Map<String, PackedLayout> layouts() {
    Map<String, PackedLayout> out = new LinkedHashMap<>();
    weights.forEach((k, w) -> out.put(k, w.layout()));
    return out;
  }

  /** Each weight as dense row-major [rows, cols] values, zero outside its kept blocks. */
  Map<String, float[]> denseValues() {
    Map<String, float[]> out = new LinkedHashMap<>();
    weights.forEach((k, w) -> out.put(k, MstArrays.rowMajor(w.denseWeight())));
    return out;
  }

  /** Per layer: the L2 norm of each kept block's values (0 for the other blocks). */
  Map<String, double[]> weightScores() {
    Map<String, double[]> out = new LinkedHashMap<>();
    weights.forEach((k, w) -> out.put(k, PackedLayouts.blockNorms(w.keptValues(), w.layout())));
    return out;
  }

  /**
   * Turns the layers' dense-gradient block scores on (fresh zeroed sums) for the next backward, a
   * growth step's, or off.
   */
  void collectGrowthScores(boolean on) {
    if (!on && !collecting) {
      return;
    }
    collecting = on;
    growthSquares.clear();
    for (Map.Entry<String, PackedSparseParam> e : weights.entrySet()) {
      double[] sink = null;
      if (on) {
        PackedLayout l = e.getValue().layout();
        sink = new double[l.blockRows() * l.blockCols()];
        growthSquares.put(e.getKey(), sink);
      }
      e.getValue().setGrowthScores(sink);
    }
  }

  /** The dense-gradient L2 norm per block of every layer, from the last growth step. */
  Map<String, double[]> gradScores() {
    return PackedLayouts.norms(growthSquares);
  }

  /** Packed slot of block {@code unit} of {@code layer} (-1 when not kept). */
  int slotOf(String layer, int unit) {
    return weights.get(layer).layout().slotOf(unit);
  }

  /** The MST layer names of the weights, in layer order. */
  Set<String> names() {
    return weights.keySet();
  }

  /** β1, β2 of the Adam updater of {@code layer}'s weight, or null for other updaters (cached). */
  double[] adamBetas(String layer) {
    if (!betas.containsKey(layer)) {
      PackedSparseParam w = weights.get(layer);
      betas.put(layer, Dl4jWeights.adamBetas(w.weightKey(), w.modelLayer()));
    }
    return betas.get(layer);
  }

  /** The packed weight MST knows as {@code layer}. */
  PackedSparseParam weight(String layer) {
    return weights.get(layer);
  }

  /**
   * Moves every changed layer to its new mask in place, and notes the slots the phase of step
   * {@code next} wants (made real by {@link #rebuild}).
   */
  void apply(Map<String, TopologyUpdater.Result> res, MstCore core, long next) {
    Map<String, Integer> capacity = capacities.capacities(core, next, this::layouts);
    for (Map.Entry<String, PackedSparseParam> e : weights.entrySet()) {
      PackedSparseParam w = e.getValue();
      TopologyUpdater.Result r = res == null ? null : res.get(e.getKey());
      PackedLayout to = w.layout();
      if (r != null && (r.pruned > 0 || r.grown > 0)) {
        to = PackedLayouts.layoutOf(r.mask, to.blockSize());
      }
      if (to.keptBlocks() > w.slots()) {
        pendingLayouts.put(e.getKey(), to); // moved in by the rebuild
      } else if (!to.equals(w.layout())) {
        w.relayout(to);
      }
      int want =
          capacity != null
              ? capacity.get(e.getKey())
              : pendingSlots.getOrDefault(e.getKey(), w.slots());
      want = Math.max(want, to.keptBlocks());
      if (want != w.slots()) {
        pendingSlots.put(e.getKey(), want);
      } else {
        pendingSlots.remove(e.getKey());
      }
    }
  }

  /** Whether some weight wants other block slots (a new phase's capacity). */
  boolean wantsRebuild() {
    return !pendingSlots.isEmpty();
  }

  /**
   * The layers whose new layout does not fit their slots: training on without {@link #rebuild}
   * would train the old layout while MST holds the new one.
   */
  Map<String, PackedLayout> waitingLayouts() {
    return pendingLayouts;
  }

  /**
   * The model with every weight at the slots it wants and the layouts that waited for them, and the
   * weights of that model. The given model is left as it is.
   */
  Rebuilt rebuild(Model model, MstCore core) {
    Model m = PackedModels.withSlots(model, pendingSlots);
    PackedDl4jWeights w = of(m, core, capacities);
    for (Map.Entry<String, PackedLayout> e : pendingLayouts.entrySet()) {
      w.weights.get(e.getKey()).relayout(e.getValue());
    }
    pendingSlots.clear();
    pendingLayouts.clear();
    return new Rebuilt(m, w);
  }

  /** A rebuilt model and its packed weights. */
  record Rebuilt(Model model, PackedDl4jWeights weights) {}
}
