package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.wrapper.BaseWrapperLayer;

/**
 * Sets the block slots of a packed weight in a layer configuration (for {@code
 * org.sparseflow.layers.api.PackedModels}, which rebuilds a model with new slots).
 */
public final class PackedSlots {
  private PackedSlots() {}

  /**
   * Gives weight {@code weightKey} of layer configuration {@code conf} (a wrapper's underlying
   * layer is reached) {@code slots} block slots.
   *
   * @throws IllegalArgumentException if the layer has no packed block weight of that key, or the
   *     slots are fewer than its kept blocks or more than all its blocks
   */
  public static void set(Layer conf, String weightKey, int slots) {
    Layer l = conf;
    while (l instanceof BaseWrapperLayer w) {
      l = w.getUnderlying();
    }
    if (l instanceof CausalSelfAttentionLayer a
        && a.packedProjections()
        && PackedProjections.WEIGHTS.contains(weightKey)) {
      int i = PackedProjections.WEIGHTS.indexOf(weightKey);
      PackedStorage.checkCapacity(
          a.getLayerName(),
          slots,
          a.getProjectionLayouts()[i].length,
          i == 3 ? a.getNOut() : a.getNIn(),
          a.getNOut(),
          SparseKernels.parsePattern("projectionPattern", a.getProjectionPattern()).getBlockSize());
      a.setProjectionSlots(i, slots);
      return;
    }
    if (!(l instanceof MaskedLinearConf c) || !"W".equals(weightKey) || !c.packedStorage()) {
      throw new IllegalArgumentException(
          "weight '"
              + weightKey
              + "' of layer '"
              + conf.getLayerName()
              + "' ("
              + conf.getClass().getSimpleName()
              + ") has no block slots; allowed: W of a SparseDenseLayer or SparseOutputLayer"
              + " with storage = packed, Wq / Wk / Wv / Wo of a CausalSelfAttentionLayer with"
              + " projectionStorage = packed");
    }
    int b = SparseKernels.parsePattern("pattern", c.getPattern()).getBlockSize();
    int kept = c.getBlockLayout().length;
    PackedStorage.checkCapacity(c.getLayerName(), slots, kept, c.getNIn(), c.getNOut(), b);
    c.setBlockCapacity(slots);
  }
}
