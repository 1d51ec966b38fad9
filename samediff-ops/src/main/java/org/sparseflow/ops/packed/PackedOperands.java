package org.sparseflow.ops.packed;

import java.util.Arrays;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;

/**
 * Argument checks and temporaries shared by the packed layers' INDArray entry points ({@link
 * PackedBlockLinear}, {@link PackedNmLinear}): dense operand shapes, the packed value array seen as
 * its matrix, and early release of detached temporaries.
 */
final class PackedOperands {
  private PackedOperands() {}

  /** A floating-point matrix [rows, cols]; {@code rows < 0} accepts any row count. */
  static void checkShape(String name, INDArray a, long rows, long cols) {
    if (a == null
        || a.rank() != 2
        || (rows >= 0 && a.size(0) != rows)
        || a.size(1) != cols
        || !a.dataType().isFPType()) {
      throw new IllegalArgumentException(
          name
              + " = "
              + (a == null ? "null" : a.dataType() + Arrays.toString(a.shape()))
              + " is not allowed; allowed: a floating-point matrix ["
              + (rows >= 0 ? rows : "N")
              + ", "
              + cols
              + "]");
    }
  }

  /**
   * The packed values as their row-major matrix {@code shape}: a contiguous array of {@code length}
   * floating-point values, flat or already shaped; {@code layout} names the layout in errors.
   */
  static INDArray asMatrix(String name, INDArray packed, long length, long[] shape, Object layout) {
    if (packed == null || packed.length() != length || !packed.dataType().isFPType()) {
      throw new IllegalArgumentException(
          name
              + " = "
              + (packed == null ? "null" : packed.dataType() + Arrays.toString(packed.shape()))
              + " is not allowed; allowed: "
              + length
              + " floating-point values (shape "
              + Arrays.toString(shape)
              + ") for "
              + layout);
    }
    if (!Shape.hasDefaultStridesForShape(packed) || packed.elementWiseStride() != 1) {
      throw new IllegalArgumentException(
          name
              + " = "
              + packed.shapeInfoToString().replace('\n', ' ')
              + " is not contiguous; allowed: a contiguous "
              + Arrays.toString(shape)
              + " row-major or flat array");
    }
    if (Arrays.equals(packed.shape(), shape) && packed.ordering() == 'c') {
      return packed;
    }
    if (packed.rank() == 2 && packed.size(0) == 1 || packed.rank() == 1) {
      return packed.reshape('c', shape);
    }
    throw new IllegalArgumentException(
        name
            + " has shape "
            + Arrays.toString(packed.shape())
            + " order "
            + packed.ordering()
            + "; allowed: "
            + Arrays.toString(shape)
            + " row-major or a flat vector");
  }

  /** Frees detached temporaries at once instead of waiting for the garbage collector. */
  static void release(INDArray... arrays) {
    for (INDArray a : arrays) {
      if (a != null && !a.isAttached() && !a.isView() && a.closeable() && !a.wasClosed()) {
        a.close();
      }
    }
  }
}
