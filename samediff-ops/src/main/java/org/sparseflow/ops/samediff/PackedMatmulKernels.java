package org.sparseflow.ops.samediff;

import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.sparseflow.ops.matmul.SparseLinear;
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

  /**
   * Checks that a new layout has the old one's shape and block size (only the kept set changes).
   */
  static void checkSameShape(PackedLayout old, PackedLayout next, String op) {
    if (old.rows() != next.rows()
        || old.cols() != next.cols()
        || old.blockSize() != next.blockSize()) {
      throw new IllegalArgumentException(
          op + ": layout " + next + " does not fit " + old + "; allowed: the same shape and block");
    }
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
    INDArray p = inputs.get(1);
    long block = (long) layout.blockSize() * layout.blockSize();
    if (p.length() < layout.packedLength() || p.length() % block != 0) {
      throw new IllegalArgumentException(
          "packed has shape "
              + Arrays.toString(p.shape())
              + "; expected "
              + Arrays.toString(layout.packedShape())
              + " (or more whole blocks: spare capacity) for "
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
    INDArray kept = PackedBlockLinear.keptBlocks(packed, layout);
    if (out2 != null) {
      PackedBlockLinear.forwardInto(SparseMatmulKernels.as2d(x), kept, bias, layout, out2);
      return;
    }
    INDArray y = PackedBlockLinear.forward(SparseMatmulKernels.as2d(x), kept, bias, layout);
    out.assign(y.reshape('c', out.shape()));
    y.close();
  }

  /**
   * dx into dx, dW of the kept blocks into dPacked (zero in spare slots), and dBias (when not
   * null); with {@code growthSquares} not null, also adds the squared Frobenius norm of every block
   * of the dense x^T dy to it (row-major block index; see {@link
   * PackedBlockLinear#addDenseBlockSquares}).
   */
  static void backward(
      INDArray x,
      INDArray packed,
      INDArray dy,
      PackedLayout layout,
      INDArray dx,
      INDArray dPacked,
      INDArray dBias,
      double[] growthSquares) {
    INDArray dy2 = SparseMatmulKernels.as2d(dy);
    if (growthSquares != null) {
      PackedBlockLinear.addDenseBlockSquares(
          SparseMatmulKernels.as2d(x), dy2, layout.blockSize(), growthSquares);
    }
    if (dPacked.length() != layout.packedLength()) {
      int b = layout.blockSize();
      int spare = (int) (dPacked.length() / ((long) b * b)) - layout.keptBlocks();
      PackedBlockLinear.blocks(dPacked, layout.keptBlocks(), spare, b).assign(0);
    }
    packed = PackedBlockLinear.keptBlocks(packed, layout);
    dPacked = PackedBlockLinear.keptBlocks(dPacked, layout);
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
      SparseLinear.biasGradient(dy2, dBias);
    }
  }
}
