package org.sparseflow.ops.packed;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.INDArrayIndex;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.matmul.PackedPanelGemm;

/**
 * y = x W + b for a block-sparse W held only as its packed kept blocks (see {@link PackedLayout}),
 * with the backward pass writing dW for the kept blocks only. No dense [rows, cols] weight array is
 * created: the kernels visit the kept blocks only, so work and weight-sized memory are proportional
 * to density. The fallback loops copy activations between ND4J and Java arrays once per call.
 *
 * <p>Float arrays whose block size is a multiple of the vector length run on the register-blocked
 * Vector API kernels of the dense-W + mask path ({@link PackedPanelGemm}), which read and write the
 * activations in place. Everything else (double, other floating types, other block sizes, no Vector
 * API) runs on the plain loops of {@link PackedKernels} in double precision and is cast back: a
 * reference-grade fallback, not a fast path.
 */
public final class PackedBlockLinear {
  private PackedBlockLinear() {}

  /** Packs the kept blocks of a dense W [rows, cols] (any order) into a new [K b, b] array. */
  public static INDArray pack(INDArray dense, PackedLayout layout) {
    checkLayout(layout);
    return PackedOperands.pack(dense, layout, p -> packInto(dense, layout, p));
  }

  /** Writes the kept blocks of dense W [rows, cols] into {@code packed} ([K b, b] or flat). */
  public static void packInto(INDArray dense, PackedLayout layout, INDArray packed) {
    checkLayout(layout);
    INDArray p = PackedOperands.packOperands(dense, packed, layout);
    int b = layout.blockSize();
    for (int slot = 0; slot < layout.keptBlocks(); slot++) {
      int i = layout.blockRowOf(slot);
      int j = panelOf(layout, slot);
      rowsOf(p, slot, 1, b).assign(dense.get(NDArrayIndex.interval(i * b, i * b + b), cols(j, b)));
    }
  }

  /** The dense W [rows, cols] ('c') of packed values: kept blocks filled in, zeros elsewhere. */
  public static INDArray unpack(INDArray packed, PackedLayout layout) {
    checkLayout(layout);
    INDArray p = PackedOperands.asMatrix("packed", packed, layout);
    INDArray dense = Nd4j.zeros(packed.dataType(), layout.rows(), layout.cols());
    int b = layout.blockSize();
    for (int slot = 0; slot < layout.keptBlocks(); slot++) {
      int i = layout.blockRowOf(slot);
      int j = panelOf(layout, slot);
      dense.get(NDArrayIndex.interval(i * b, i * b + b), cols(j, b)).assign(rowsOf(p, slot, 1, b));
    }
    return dense;
  }

  /**
   * y = x W + bias, x [N, rows], packed [K b, b] (or flat, length K b b), bias [1, cols] or [cols]
   * or null; returns y [N, cols] row-major, in the packed values' data type.
   */
  public static INDArray forward(INDArray x, INDArray packed, INDArray bias, PackedLayout layout) {
    checkLayout(layout);
    INDArray p = PackedOperands.forwardOperands(x, packed, bias, layout);
    int n = (int) x.size(0);
    int cols = (int) layout.cols();
    INDArray y;
    if (tiled(p, layout, x)) {
      y = Nd4j.createUninitialized(DataType.FLOAT, n, cols);
      forwardInto(x, packed, bias, layout, y);
      return y;
    } else {
      double[] ya = new double[n * cols];
      PackedKernels.forward(PackedOperands.doubles(x), PackedOperands.doubles(p), ya, n, layout);
      y = Nd4j.createFromArray(ya).reshape('c', n, cols).castTo(p.dataType());
    }
    return PackedOperands.addBias(y, bias);
  }

  /**
   * As {@link #forward}, writing y [N, cols] (overwritten; any strides) instead of returning it:
   * the register-blocked kernels write their tiles straight into y, without a temporary.
   */
  public static void forwardInto(
      INDArray x, INDArray packed, INDArray bias, PackedLayout layout, INDArray y) {
    checkLayout(layout);
    INDArray p = PackedOperands.forwardOperands(x, packed, bias, layout);
    PackedOperands.checkShape("y", y, x.size(0), layout.cols());
    if (!tiled(p, layout, x, y)) {
      INDArray r = forward(x, packed, bias, layout);
      y.assign(r);
      PackedOperands.release(r);
      return;
    }
    PackedPanelGemm.forward(
        x,
        PackedOperands.floats(p),
        layout.blockSize(),
        layout.panelStarts(),
        layout.slotBlockRows(),
        y);
    PackedOperands.addBias(y, bias);
  }

  /**
   * As {@link #backward} with input gradient, writing dx [N, rows] (overwritten; any strides)
   * instead of returning it.
   */
  public static void backwardInto(
      INDArray x,
      INDArray packed,
      PackedLayout layout,
      INDArray dy,
      INDArray dPackedOut,
      INDArray dx) {
    checkLayout(layout);
    INDArray[] operands = PackedOperands.backwardOperands(x, packed, dy, dPackedOut, layout);
    PackedOperands.checkShape("dx", dx, x.size(0), layout.rows());
    if (!tiled(operands[0], layout, x, dy, dx)) {
      INDArray r = backward(x, packed, layout, dy, dPackedOut, true);
      dx.assign(r);
      PackedOperands.release(r);
      return;
    }
    tiledBackward(x, operands[0], operands[1], layout, dy, dx);
  }

  /**
   * dW of the kept blocks into dp and dx = dy W^T into dx (when not null), on the tiled kernels.
   */
  private static void tiledBackward(
      INDArray x, INDArray p, INDArray dp, PackedLayout layout, INDArray dy, INDArray dx) {
    float[] dv =
        PackedPanelGemm.backward(
            x,
            PackedOperands.floats(p),
            layout.blockSize(),
            layout.blockRows(),
            layout.panelStarts(),
            layout.slotBlockRows(),
            dy,
            dx,
            true);
    assignTo(dp, Nd4j.createFromArray(dv));
  }

  /**
   * Backward of {@link #forward}: writes dW of the kept blocks into {@code dPackedOut} (same shape
   * as the packed values) and returns dx [N, rows] (row-major), or null when {@code inputGrad} is
   * false. The bias gradient is the column sum of dy and is left to the caller.
   */
  public static INDArray backward(
      INDArray x,
      INDArray packed,
      PackedLayout layout,
      INDArray dy,
      INDArray dPackedOut,
      boolean inputGrad) {
    checkLayout(layout);
    INDArray[] operands = PackedOperands.backwardOperands(x, packed, dy, dPackedOut, layout);
    INDArray p = operands[0];
    INDArray dp = operands[1];
    int n = (int) x.size(0);
    int rows = (int) layout.rows();
    int len = (int) layout.packedLength();
    if (tiled(p, layout, x, dy)) {
      INDArray dx = inputGrad ? Nd4j.createUninitialized(DataType.FLOAT, n, rows) : null;
      tiledBackward(x, p, dp, layout, dy, dx);
      return dx;
    }
    double[] dya = PackedOperands.doubles(dy);
    double[] dv = new double[len];
    PackedKernels.weightGrad(PackedOperands.doubles(x), dya, dv, n, layout);
    assignTo(dp, Nd4j.createFromArray(dv));
    if (!inputGrad) {
      return null;
    }
    double[] dx = new double[n * rows];
    PackedKernels.inputGrad(dya, PackedOperands.doubles(p), dx, n, layout);
    return Nd4j.createFromArray(dx).reshape('c', n, rows).castTo(p.dataType());
  }

  /**
   * Whether the register-blocked kernels of {@link PackedPanelGemm} serve this call: float values
   * and activations, a block size that is a multiple of the vector length. They read and write the
   * activations in place, tile by tile; the loops of {@link PackedKernels} remain for double and
   * other block sizes.
   */
  private static boolean tiled(INDArray p, PackedLayout layout, INDArray... activations) {
    return p.dataType() == DataType.FLOAT
        && PackedPanelGemm.applies(layout.blockSize(), activations);
  }

  /** Copies a flat temporary into the (contiguous) target and frees the temporary. */
  private static void assignTo(INDArray target, INDArray flat) {
    target.assign(flat.reshape('c', target.shape()));
    PackedOperands.release(flat);
  }

  /**
   * The packed values of layout {@code to} made from those of layout {@code from} (same rows, cols
   * and block size): a block kept in both keeps its values, a block new in {@code to} is zero, and
   * the result ([capacityBlocks b, b], row-major, in packed's data type) has zero spare slots after
   * {@code to}'s kept blocks. {@code packed} may itself have spare slots after {@code from}'s.
   *
   * @throws IllegalArgumentException if the layouts differ in shape or block size, packed is too
   *     short for {@code from}, or capacityBlocks is below {@code to.keptBlocks()}
   */
  public static INDArray relayout(
      INDArray packed, PackedLayout from, PackedLayout to, int capacityBlocks) {
    if (from.rows() != to.rows()
        || from.cols() != to.cols()
        || from.blockSize() != to.blockSize()) {
      throw new IllegalArgumentException(
          "to = " + to + " does not match from = " + from + "; allowed: same rows, cols and block");
    }
    int b = to.blockSize();
    if (capacityBlocks < to.keptBlocks()) {
      throw new IllegalArgumentException(
          "capacityBlocks = " + capacityBlocks + "; allowed: >= " + to.keptBlocks());
    }
    if (packed.length() < from.packedLength()) {
      throw new IllegalArgumentException(
          "packed has " + packed.length() + " values; allowed: >= " + from.packedLength());
    }
    double[] src = PackedOperands.doubles(packed);
    double[] out = new double[capacityBlocks * b * b];
    int bb = b * b;
    for (int slot = 0; slot < to.keptBlocks(); slot++) {
      int unit = to.blockRowOf(slot) * to.blockCols() + panelOf(to, slot);
      int old = from.slotOf(unit);
      if (old >= 0) {
        System.arraycopy(src, old * bb, out, slot * bb, bb);
      }
    }
    INDArray d = Nd4j.createFromArray(out).reshape('c', (long) capacityBlocks * b, b);
    if (packed.dataType() == DataType.DOUBLE) {
      return d;
    }
    INDArray r = d.castTo(packed.dataType());
    PackedOperands.release(d);
    return r;
  }

  /**
   * Adds to {@code out[i * (cols / b) + j]} the squared Frobenius norm of block (i, j) of the dense
   * weight gradient x^T dy (x [N, rows], dy [N, cols]), one block row at a time: the [b, cols]
   * strip of one block row is the only gradient memory held, never the dense [rows, cols]. What
   * gradient-based regrowth (RigL) ranks candidate blocks by.
   */
  public static void addDenseBlockSquares(INDArray x, INDArray dy, int b, double[] out) {
    long rows = x.size(1);
    long cols = dy.size(1);
    if (x.rank() != 2 || dy.rank() != 2 || x.size(0) != dy.size(0)) {
      throw new IllegalArgumentException(
          "x and dy must be [N, rows] and [N, cols]; got "
              + Arrays.toString(x.shape())
              + " and "
              + Arrays.toString(dy.shape()));
    }
    int blockCols = (int) (cols / b);
    if (rows % b != 0 || cols % b != 0 || out.length != rows / b * blockCols) {
      throw new IllegalArgumentException(
          "out has length "
              + out.length
              + "; allowed: "
              + (rows / b) * (cols / b)
              + " blocks of "
              + b
              + " for rows = "
              + rows
              + ", cols = "
              + cols);
    }
    for (int i = 0; i < rows / b; i++) {
      INDArray strip = Nd4j.gemm(x.get(NDArrayIndex.all(), cols(i, b)), dy, true, false);
      // the strip is a fresh row-major [b, cols] array: read its buffer as it is (a cast to
      // double per strip took most of a growth step's time)
      boolean f = strip.dataType() == DataType.FLOAT;
      float[] gf = f ? strip.dup('c').data().asFloat() : null;
      double[] gd = f ? null : PackedOperands.doubles(strip);
      PackedOperands.release(strip);
      for (int r = 0; r < b; r++) {
        for (int c = 0; c < cols; c++) {
          int k = (int) (r * cols + c);
          double v = f ? gf[k] : gd[k];
          out[i * blockCols + c / b] += v * v;
        }
      }
    }
  }

  /** Block slots {@code first .. first + count} of the row-major packed matrix: a view. */
  public static INDArray blocks(INDArray packed, int first, int count, int b) {
    return rowsOf(packed.reshape('c', packed.length() / b, b), first, count, b);
  }

  /** Block slot {@code slot} of the row-major packed matrix: a [b, b] view. */
  public static INDArray block(INDArray packed, int slot, int b) {
    return rowsOf(packed.reshape('c', packed.length() / b, b), slot, 1, b);
  }

  /**
   * The kept blocks of packed values laid out as {@code layout} (a view of the first {@code
   * layout.keptBlocks()} block slots), or the array itself when it has no spare slots after them.
   */
  public static INDArray keptBlocks(INDArray packed, PackedLayout layout) {
    return packed.length() == layout.packedLength()
        ? packed
        : leadingBlocks(packed, layout.keptBlocks(), layout.blockSize());
  }

  /**
   * The first {@code blocks} block slots of the row-major packed matrix (a contiguous view): the
   * kept part of an array with spare capacity.
   */
  public static INDArray leadingBlocks(INDArray packed, int blocks, int b) {
    return rowsOf(packed.reshape('c', packed.length() / b, b), 0, blocks, b);
  }

  /** The block column of kept block {@code slot}: its panel. */
  private static int panelOf(PackedLayout layout, int slot) {
    int lo = 0;
    int hi = layout.blockCols() - 1;
    while (lo < hi) { // last panel j with panelStart(j) <= slot
      int mid = (lo + hi + 1) >>> 1;
      if (layout.panelStart(mid) <= slot) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }

  /**
   * Rows {@code slot * b .. (slot + count) * b} of the row-major packed matrix p [K b, b], a
   * contiguous view built from p's buffer (ND4J 1.0.0-M2.1's {@code get(interval, all)} returned a
   * rank-0 array for some row ranges of an [8192, 16] matrix).
   */
  private static INDArray rowsOf(INDArray p, int slot, int count, int b) {
    return Nd4j.create(
        p.data(),
        new long[] {(long) count * b, b},
        new long[] {b, 1},
        p.offset() + (long) slot * b * b,
        'c');
  }

  private static INDArrayIndex cols(int j, int b) {
    return NDArrayIndex.interval((long) j * b, (long) (j + 1) * b);
  }

  private static void checkLayout(PackedLayout layout) {
    PackedOperands.checkLayout(layout, "PackedLayout");
  }
}
