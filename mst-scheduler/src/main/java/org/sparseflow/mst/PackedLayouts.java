package org.sparseflow.mst;

import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.Phase;
import org.sparseflow.mst.core.SparsitySchedule;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * What MST does with packed block layouts, whichever framework holds the values ({@link
 * PackedSameDiffWeights}, {@link PackedDl4jWeights}): layers keyed by their MST name, in
 * registration order.
 */
final class PackedLayouts {
  private static final Logger LOG = LoggerFactory.getLogger(PackedLayouts.class);

  /** The phase the capacities were last fitted to (null before the first fit). */
  private Phase capacityPhase;

  /** Registers every layer with the core, refusing a config pattern other than the layouts'. */
  static void register(MstCore core, Map<String, PackedLayout> layouts) {
    MaskPattern p = MaskPattern.parse(core.config().getPattern());
    for (Map.Entry<String, PackedLayout> e : layouts.entrySet()) {
      PackedLayout l = e.getValue();
      if (p.kind() != MaskPattern.Kind.BLOCK || p.blockSize() != l.blockSize()) {
        throw new IllegalArgumentException(
            "MST config: field 'pattern' is "
                + p
                + " but weight '"
                + e.getKey()
                + "' is packed in blocks of "
                + l.blockSize()
                + "; allowed: block"
                + l.blockSize());
      }
      core.register(e.getKey(), (int) l.rows(), (int) l.cols());
    }
  }

  /**
   * Packed storage holds only the kept blocks. A schedule that starts denser than its ultra-sparse
   * phase (a dense warm-up) therefore needs layouts at least as dense as its first level, i.e.
   * packed at MST's first masks; sparser layouts would have MST grow zero-valued blocks back at its
   * first mask step instead of warming up dense.
   *
   * @param howToPack how the caller's framework packs at MST's first masks (for the error)
   */
  static void checkStartLevel(MstCore core, Map<String, PackedLayout> layouts, String howToPack) {
    SparsitySchedule s = core.config().getSchedule();
    if (s.getInitialSparsity() >= s.getUltraSparsity()) {
      return; // a sparse start: MST fits each layer to its share at the first mask step
    }
    Map<String, Double> targets = core.layerTargets(s.sparsityAt(0));
    for (Map.Entry<String, PackedLayout> e : layouts.entrySet()) {
      PackedLayout l = e.getValue();
      int units = l.blockRows() * l.blockCols();
      // - 1: MST's rounding of a layer's share may keep one unit less
      int need = (int) Math.floor(units * (1.0 - targets.get(e.getKey()))) - 1;
      if (l.keptBlocks() < need) {
        throw new IllegalArgumentException(
            "MST schedule: initialSparsity = "
                + s.getInitialSparsity()
                + " (a dense warm-up) starts packed weight '"
                + e.getKey()
                + "' at about "
                + (need + 1)
                + " of its "
                + units
                + " blocks, but its packed layout keeps "
                + l.keptBlocks()
                + "; allowed: "
                + howToPack
                + ", a sparse start (initialSparsity >= ultraSparsity = "
                + s.getUltraSparsity()
                + ": MstConfig.withSparseStart(), train --sparse-start), or storage: masked");
      }
    }
  }

  /**
   * Binds packed weights to {@code core}: registers them, then either checks them against the state
   * {@code restore} restores (it says whether there was one) or starts MST from them. A fresh start
   * draws the first masks as a masked run does (same draws, so the same random stream after them);
   * layouts that are exactly these start where a masked run starts, other layouts become the first
   * masks.
   *
   * @param denseValues the weights as dense row-major values, asked for only by magnitude masks
   * @param howToPack how the caller's framework packs at MST's first masks (for the error)
   */
  static void bind(
      MstCore core,
      Map<String, PackedLayout> layouts,
      BooleanSupplier restore,
      Supplier<Map<String, float[]>> denseValues,
      String howToPack) {
    register(core, layouts);
    if (restore.getAsBoolean()) { // a saved state is restored into the registered layers
      checkMatches(layouts, core.masks());
      return;
    }
    checkStartLevel(core, layouts, howToPack);
    Map<String, LayerMask> masks = masks(layouts, MaskPattern.parse(core.config().getPattern()));
    boolean magnitude = core.config().getInitialMask() == InitialMask.MAGNITUDE;
    Map<String, LayerMask> drawn =
        new LinkedHashMap<>(core.initialize(magnitude ? denseValues.get() : null));
    if (!drawn.equals(masks)) {
      LOG.info("MST starts from the packed layouts, which are not its own first masks");
      core.initializeFrom(masks);
    }
  }

  /** The layouts as MST masks. */
  static Map<String, LayerMask> masks(Map<String, PackedLayout> layouts, MaskPattern pattern) {
    Map<String, LayerMask> out = new LinkedHashMap<>();
    for (Map.Entry<String, PackedLayout> e : layouts.entrySet()) {
      PackedLayout l = e.getValue();
      BitSet on = new BitSet();
      for (int u : l.keptRowMajor()) {
        on.set(u);
      }
      out.put(e.getKey(), new LayerMask(e.getKey(), (int) l.rows(), (int) l.cols(), pattern, on));
    }
    return out;
  }

  /** After a restore: the saved model's layouts must be MST's saved masks. */
  static void checkMatches(Map<String, PackedLayout> layouts, Map<String, LayerMask> saved) {
    Map<String, LayerMask> mine = masks(layouts, saved.values().iterator().next().pattern());
    for (Map.Entry<String, LayerMask> e : mine.entrySet()) {
      if (!e.getValue().activeBits().equals(saved.get(e.getKey()).activeBits())) {
        throw new IllegalStateException(
            "the saved model's packed layout of '"
                + e.getKey()
                + "' differs from the saved MST mask; the checkpoint's model and MST state do not"
                + " belong together");
      }
    }
  }

  /** The L2 norm of each kept block of {@code kept} [keptBlocks * b, b] (0 for other blocks). */
  static double[] blockNorms(INDArray kept, PackedLayout l) {
    int b = l.blockSize();
    INDArray norms = kept.reshape('c', l.keptBlocks(), (long) b * b).norm2(1);
    double[] s = new double[l.blockRows() * l.blockCols()];
    for (int u : l.keptRowMajor()) {
      s[u] = norms.getDouble(l.slotOf(u));
    }
    return s;
  }

  /** Square roots of summed squares (the growth scores' norms), as new arrays. */
  static Map<String, double[]> norms(Map<String, double[]> squares) {
    Map<String, double[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, double[]> e : squares.entrySet()) {
      double[] s = e.getValue().clone();
      for (int i = 0; i < s.length; i++) {
        s[i] = Math.sqrt(s[i]);
      }
      out.put(e.getKey(), s);
    }
    return out;
  }

  /** The packed layout of an MST block mask. */
  static PackedLayout layoutOf(LayerMask m, int b) {
    BitSet on = m.activeBits();
    int[] kept = new int[on.cardinality()];
    int i = 0;
    for (int u = on.nextSetBit(0); u >= 0; u = on.nextSetBit(u + 1)) {
      kept[i++] = u;
    }
    return PackedLayout.of(m.rows(), m.cols(), b, kept);
  }

  /**
   * The block capacity of every layer for the phase of step {@code next}: the most blocks its share
   * of the schedule's target allows over the rest of that phase; null while the phase is the one
   * the capacities were last fitted to.
   */
  Map<String, Integer> capacities(
      MstCore core, long next, Supplier<Map<String, PackedLayout>> currentLayouts) {
    SparsitySchedule s = core.config().getSchedule();
    long total = s.getTotalSteps();
    Phase phase = s.phaseAt(Math.min(next, total - 1));
    if (phase == capacityPhase) {
      return null; // every step but a phase's first: nothing to build
    }
    Map<String, PackedLayout> layouts = currentLayouts.get();
    capacityPhase = phase;
    double least = s.sparsityAt(Math.min(next, total - 1));
    for (long t = next; t < total && s.phaseAt(t) == phase; t++) {
      least = Math.min(least, s.sparsityAt(t));
    }
    Map<String, Double> targets = core.layerTargets(least);
    Map<String, Integer> out = new LinkedHashMap<>();
    for (Map.Entry<String, PackedLayout> e : layouts.entrySet()) {
      PackedLayout l = e.getValue();
      int units = l.blockRows() * l.blockCols();
      // + 1: the updater's rounding of a layer's target may keep one unit more
      int need = (int) Math.ceil(units * (1.0 - targets.get(e.getKey()))) + 1;
      out.put(e.getKey(), Math.min(units, need));
    }
    return out;
  }
}
