package org.sparseflow.layers.nn;

import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;

/**
 * A layer implementation with masked (sparse) weights. Used by {@code
 * org.sparseflow.layers.api.SparseParams} to drive the masks of any model.
 */
public interface SparseWeightLayer extends Layer {

  /** Keys of the masked weights, e.g. ["W"] or ["Wq", "Wk", "Wv", "Wo"]. */
  List<String> sparseWeightKeys();

  /**
   * The block layout when this weight is stored packed (only its kept blocks are a param), else
   * null (dense W with a mask param). Packed weights have no mask param: {@link #maskKey} names
   * none that exists.
   */
  default PackedLayout packedLayout(String weightKey) {
    return null;
  }

  /**
   * The n:m layout when this weight is stored packed with an n:m pattern (only its kept values are
   * a param, [nIn / m * n, nOut]), else null. {@link #packedLayout} is null for such a weight.
   */
  default PackedNmLayout packedNmLayout(String weightKey) {
    return null;
  }

  /**
   * Block slots of a packed block weight's param (at least its kept blocks; the rest hold zeros),
   * or 0 when the weight is not stored packed in blocks.
   */
  default int packedSlots(String weightKey) {
    return 0;
  }

  /**
   * Lays a packed block weight out as {@code layout} (at most {@link #packedSlots} kept blocks).
   * Only the layout changes: moving the values and optimizer state is the caller's (see {@code
   * PackedSparseParam#relayout}).
   *
   * @throws UnsupportedOperationException if the weight is not stored packed in blocks
   */
  default void setPackedLayout(String weightKey, PackedLayout layout) {
    throw new UnsupportedOperationException(
        "'"
            + weightKey
            + "' of "
            + getClass().getSimpleName()
            + " has no changeable packed layout");
  }

  /**
   * While {@code squares} is not null, every backward adds the squared Frobenius norm of each block
   * of the dense weight gradient x^T dy to it (row-major block index), computed one block row at a
   * time, so no dense gradient array exists: what MST's gradient-based regrowth ranks blocks by.
   *
   * @throws UnsupportedOperationException if the weight is not stored packed in blocks
   */
  default void setGrowthScores(String weightKey, double[] squares) {
    throw new UnsupportedOperationException(
        "'" + weightKey + "' of " + getClass().getSimpleName() + " computes no growth scores");
  }

  /** Key of the 0/1 mask param of a masked weight ("M" for "W", "Mq" for "Wq", ...). */
  String maskKey(String weightKey);

  /** Pattern string (PatternSpec form) of a masked weight. */
  String pattern(String weightKey);

  /**
   * While true, every backward also computes the dense gradient x^T dy of each masked weight into a
   * layer-owned array ({@link #lastWeightGradient}); the gradient handed to the updater stays
   * masked, so optimizer state at pruned positions is not touched. Stays set until cleared.
   */
  void setDenseGradientRequested(boolean requested);

  boolean isDenseGradientRequested();

  /**
   * The weight gradient of the last backward: the dense one if it was requested, otherwise the
   * masked gradient view (valid until the updater turns it into the update, i.e. read it in
   * onGradientCalculation).
   */
  INDArray lastWeightGradient(String weightKey);

  /** Re-applies every mask to its weight (W = W o M). Called after each optimizer step. */
  void applyMasks();
}
