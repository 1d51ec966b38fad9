package org.sparseflow.ops.matmul;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * The register-blocked Vector API kernels of the dense-W + mask path ({@link VectorBlockKernels}),
 * for a weight held only as its kept blocks packed by block column (the storage of {@code
 * org.sparseflow.ops.packed}): the same tiling, threading and fixed-order dW reduction, without
 * gathering the blocks from a dense W first. Activations are read from and written to ND4J memory
 * tile by tile, never copied whole.
 */
public final class PackedPanelGemm {
  private PackedPanelGemm() {}

  /**
   * True when these kernels serve block size b and the operands: the Vector API is present, b is a
   * multiple of the vector length, and every non-null operand is a viewable rank-2 FLOAT array.
   */
  public static boolean applies(int b, INDArray... operands) {
    if (!VectorSupport.AVAILABLE || !VectorBlockKernels.supportsBlock(b)) {
      return false;
    }
    for (INDArray a : operands) {
      if (a != null && (a.dataType() != DataType.FLOAT || a.rank() != 2 || !TileIo.viewable(a))) {
        return false;
      }
    }
    return true;
  }

  /**
   * y [n, cols] = x [n, rows] W, overwriting y, with W given as its kept b x b blocks: slot s is
   * values[s*b*b ..] (b rows of b), block column j holds slots panelStart[j] .. panelStart[j+1]
   * with block rows slotBlockRows[s]. Returns whether y holds NaN (or a non-finite sum).
   */
  public static boolean forward(
      INDArray x, float[] values, int b, int[] panelStart, int[] slotBlockRows, INDArray y) {
    return VectorBlockKernels.forward(
        x, PackedBlocks.ofPanels(b, panelStart, slotBlockRows, values), y);
  }

  /**
   * The backward of {@link #forward}: dx = dy W^T overwriting dx (when not null), and returns dW =
   * x^T dy of the kept blocks in the same packed order (null when {@code weightGrad} is false).
   * Summation order is fixed, so the result does not depend on the thread count.
   */
  public static float[] backward(
      INDArray x,
      float[] values,
      int b,
      int blockRows,
      int[] panelStart,
      int[] slotBlockRows,
      INDArray dy,
      INDArray dx,
      boolean weightGrad) {
    PackedBlocks p = PackedBlocks.ofPanels(b, panelStart, slotBlockRows, values);
    // packed storage does not NaN-check x, so the kernel need not probe it
    return VectorBlockKernels.backward(x, p, blockRows, dy, dx, weightGrad, false, null).weight();
  }
}
