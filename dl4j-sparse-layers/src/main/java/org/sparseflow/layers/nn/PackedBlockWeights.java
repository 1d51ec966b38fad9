package org.sparseflow.layers.nn;

import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * The packed block kernels on a layer's packed weight param, which may have spare block slots after
 * the kept blocks (room for blocks MST grows within a phase): the kernels read and write the kept
 * part, spare slots get a zero gradient and so stay zero.
 */
final class PackedBlockWeights {
  private PackedBlockWeights() {}

  /**
   * Checks a growth-score sink for a packed block weight: a null layout means the weight is not
   * packed in blocks ({@code storage} names the option that would make it so); the sink, when not
   * null, has one entry per block of the weight.
   */
  static void checkGrowthSink(String layer, String storage, PackedLayout l, double[] squares) {
    if (l == null) {
      throw new UnsupportedOperationException(
          "layer '"
              + layer
              + "': growth scores are computed for "
              + storage
              + " = packed with a block pattern; masked storage gives the dense gradient"
              + " (setDenseGradientRequested)");
    }
    if (squares != null && squares.length != l.blockRows() * l.blockCols()) {
      throw new IllegalArgumentException(
          "squares has length "
              + squares.length
              + "; allowed: "
              + l.blockRows() * l.blockCols()
              + " (one per block of the weight of layer '"
              + layer
              + "')");
    }
  }

  /** Block slots of a packed param [slots * b, b]. */
  static int slots(INDArray packed, PackedLayout l) {
    return (int) (packed.length() / ((long) l.blockSize() * l.blockSize()));
  }

  /** y = x W + bias on the kept blocks. */
  static INDArray forward(INDArray x, INDArray packed, INDArray bias, PackedLayout l) {
    return PackedBlockLinear.forward(x, PackedBlockLinear.keptBlocks(packed, l), bias, l);
  }

  /**
   * dW of the kept blocks into {@code gradView} (zero in spare slots) and returns dx; with {@code
   * growth} not null also adds each block's squared norm of the dense x^T dy to it, one block row
   * at a time.
   */
  static INDArray backward(
      INDArray x,
      INDArray packed,
      PackedLayout l,
      INDArray dy,
      INDArray gradView,
      double[] growth) {
    if (growth != null) {
      PackedBlockLinear.addDenseBlockSquares(x, dy, l.blockSize(), growth);
    }
    INDArray keptGrad = PackedBlockLinear.keptBlocks(gradView, l);
    if (keptGrad != gradView) {
      PackedBlockLinear.blocks(
              gradView, l.keptBlocks(), slots(gradView, l) - l.keptBlocks(), l.blockSize())
          .assign(0);
    }
    return PackedBlockLinear.backward(
        x, PackedBlockLinear.keptBlocks(packed, l), l, dy, keptGrad, true);
  }
}
