package org.sparseflow.ops.samediff;

import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * Array-level forward/backward of the packed-storage SameDiff matmul ({@link PackedMatmulOp}): the
 * weight is only its kept b x b blocks ({@link PackedLayout}), and the layout travels in the ops'
 * iArgs as {@code [blockSize, rows, cols, kept block indices (row-major)...]}.
 */
final class PackedMatmulKernels {

  /** iArgs before the kept block indices: blockSize, rows, cols. */
  static final int HEADER = 3;

  private PackedMatmulKernels() {}

  /** The iArgs that describe a layout. */
  static long[] iArgs(PackedLayout layout) {
    int[] kept = layout.keptRowMajor();
    long[] a = new long[HEADER + kept.length];
    a[0] = layout.blockSize();
    a[1] = layout.rows();
    a[2] = layout.cols();
    for (int i = 0; i < kept.length; i++) {
      a[HEADER + i] = kept[i];
    }
    return a;
  }

  /** The layout an op's iArgs describe (validated by {@link PackedLayout#of}). */
  static PackedLayout layout(long[] a, String op) {
    if (a == null || a.length < HEADER) {
      throw new IllegalStateException(
          op + " has iArgs " + Arrays.toString(a) + "; expected [blockSize, rows, cols, kept...]");
    }
    int[] kept = new int[a.length - HEADER];
    for (int i = 0; i < kept.length; i++) {
      kept[i] = Math.toIntExact(a[HEADER + i]);
    }
    return PackedLayout.of(a[1], a[2], Math.toIntExact(a[0]), kept);
  }

  /** Checks x [..., rows] and the packed values' length against the layout. */
  static void checkInputs(List<INDArray> inputs, PackedLayout layout, int min, String what) {
    if (inputs.size() < min) {
      throw new IllegalArgumentException(
          "inputs has " + inputs.size() + " arrays; expected " + what);
    }
    INDArray x = inputs.get(0);
    if (x.rank() < 2 || x.size(-1) != layout.rows()) {
      throw new IllegalArgumentException(
          "x has shape " + Arrays.toString(x.shape()) + "; expected [..., " + layout.rows() + "]");
    }
    if (inputs.get(1).length() != layout.packedLength()) {
      throw new IllegalArgumentException(
          "packed has shape "
              + Arrays.toString(inputs.get(1).shape())
              + "; expected "
              + Arrays.toString(layout.packedShape())
              + " for "
              + layout);
    }
  }

  /**
   * out [..., k] as a 2-D view [n, k] writing through to out, or null when it has none (then the
   * result is computed apart and copied).
   */
  private static INDArray view2d(INDArray out) {
    if (out.rank() == 2) {
      return out;
    }
    if (out.ordering() != 'c' || !Shape.hasDefaultStridesForShape(out)) {
      return null;
    }
    return out.reshape('c', out.length() / out.size(-1), out.size(-1));
  }

  static void forward(
      INDArray x, INDArray packed, INDArray bias, PackedLayout layout, INDArray out) {
    INDArray out2 = view2d(out);
    if (out2 != null) {
      PackedBlockLinear.forwardInto(SparseMatmulKernels.as2d(x), packed, bias, layout, out2);
      return;
    }
    INDArray y = PackedBlockLinear.forward(SparseMatmulKernels.as2d(x), packed, bias, layout);
    out.assign(y.reshape('c', out.shape()));
    y.close();
  }

  /** dx into dx, dW of the kept blocks into dPacked, and dBias (when not null). */
  static void backward(
      INDArray x,
      INDArray packed,
      INDArray dy,
      PackedLayout layout,
      INDArray dx,
      INDArray dPacked,
      INDArray dBias) {
    INDArray dy2 = SparseMatmulKernels.as2d(dy);
    INDArray dx2 = view2d(dx);
    if (dx2 != null) {
      PackedBlockLinear.backwardInto(
          SparseMatmulKernels.as2d(x), packed, layout, dy2, dPacked, dx2);
    } else {
      INDArray g =
          PackedBlockLinear.backward(
              SparseMatmulKernels.as2d(x), packed, layout, dy2, dPacked, true);
      dx.assign(g.reshape('c', dx.shape()));
      g.close();
    }
    if (dBias != null) {
      dBias.assign(dy2.sum(0).reshape(dBias.shape()));
    }
  }
}
