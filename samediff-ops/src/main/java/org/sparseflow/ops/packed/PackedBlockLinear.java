package org.sparseflow.ops.packed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.INDArrayIndex;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * y = x W + b for a block-sparse W held only as its packed kept blocks (see {@link PackedLayout}),
 * with the backward pass writing dW for the kept blocks only. No dense [rows, cols] array is
 * created: per block column j (panel), the input columns of the panel's kept block rows are
 * gathered into X_j [N, k_j b] and y[:, j] = X_j P_j with P_j the panel's [k_j b, b] slice of the
 * packed values; dP_j = X_j^T dy[:, j]; dx per block row i is [dy[:, j] for kept (i, j)] times the
 * stacked transposed blocks. Work and temporary memory are proportional to the kept blocks.
 *
 * <p>Float and double; the matrix products go through ND4J's BLAS gemm. This is the packed-input
 * entry point next to the dense-W + mask kernels of {@code org.sparseflow.ops.matmul}.
 */
public final class PackedBlockLinear {
  private PackedBlockLinear() {}

  /** Packs the kept blocks of a dense W [rows, cols] (any order) into a new [K b, b] array. */
  public static INDArray pack(INDArray dense, PackedLayout layout) {
    checkLayout(layout);
    INDArray out = Nd4j.createUninitialized(dense.dataType(), layout.packedShape(), 'c');
    packInto(dense, layout, out);
    return out;
  }

  /** Writes the kept blocks of dense W [rows, cols] into {@code packed} ([K b, b] or flat). */
  public static void packInto(INDArray dense, PackedLayout layout, INDArray packed) {
    checkLayout(layout);
    checkShape("dense", dense, layout.rows(), layout.cols());
    INDArray p = asMatrix("packed", packed, layout);
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
    INDArray p = asMatrix("packed", packed, layout);
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
   * or null; returns y [N, cols] row-major.
   */
  public static INDArray forward(INDArray x, INDArray packed, INDArray bias, PackedLayout layout) {
    checkLayout(layout);
    checkShape("x", x, -1, layout.rows());
    INDArray p = asMatrix("packed", packed, layout);
    if (bias != null && bias.length() != layout.cols()) {
      throw new IllegalArgumentException(
          "bias has length " + bias.length() + "; allowed: " + layout.cols() + " (or null)");
    }
    int b = layout.blockSize();
    INDArray y = Nd4j.create(p.dataType(), new long[] {x.size(0), layout.cols()}, 'c');
    for (int j = 0; j < layout.blockCols(); j++) {
      int s0 = layout.panelStart(j);
      int k = layout.panelStart(j + 1) - s0;
      if (k == 0) {
        continue;
      }
      try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        INDArray xj = gatherX(x, layout, s0, k);
        INDArray prod = xj.mmul(rowsOf(p, s0, k, b));
        y.get(NDArrayIndex.all(), cols(j, b)).assign(prod);
        release(prod);
        if (fresh(layout, s0, k)) {
          release(xj);
        }
      }
    }
    if (bias != null) {
      y.addiRowVector(bias.reshape(1, layout.cols()).castTo(y.dataType()));
    }
    return y;
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
    checkShape("x", x, -1, layout.rows());
    checkShape("dy", dy, x.size(0), layout.cols());
    INDArray p = asMatrix("packed", packed, layout);
    INDArray dp = asMatrix("dPackedOut", dPackedOut, layout);
    int b = layout.blockSize();
    for (int j = 0; j < layout.blockCols(); j++) {
      int s0 = layout.panelStart(j);
      int k = layout.panelStart(j + 1) - s0;
      if (k == 0) {
        continue;
      }
      try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        INDArray xj = gatherX(x, layout, s0, k);
        INDArray dyj = dy.get(NDArrayIndex.all(), cols(j, b));
        INDArray prod = xj.transpose().mmul(dyj);
        rowsOf(dp, s0, k, b).assign(prod);
        release(prod);
        if (fresh(layout, s0, k)) {
          release(xj);
        }
      }
    }
    if (!inputGrad) {
      return null;
    }
    INDArray dx = Nd4j.create(p.dataType(), new long[] {x.size(0), layout.rows()}, 'c');
    for (int i = 0; i < layout.blockRows(); i++) {
      int[] panels = layout.rowPanels(i);
      int[] slots = layout.rowSlots(i);
      if (panels.length == 0) {
        continue;
      }
      try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        INDArray prod = rowProduct(dy, p, panels, slots, b);
        dx.get(NDArrayIndex.all(), NDArrayIndex.interval(i * b, i * b + b)).assign(prod);
        release(prod);
      }
    }
    return dx;
  }

  /** [dy[:, j] for the kept (i, j)] times the stacked transposed blocks: dx[:, i] [N, b]. */
  private static INDArray rowProduct(INDArray dy, INDArray p, int[] panels, int[] slots, int b) {
    INDArray d;
    INDArray t;
    if (panels.length == 1) {
      d = dy.get(NDArrayIndex.all(), cols(panels[0], b));
      t = rowsOf(p, slots[0], 1, b).transpose();
    } else {
      INDArray[] ds = new INDArray[panels.length];
      INDArray[] ts = new INDArray[panels.length];
      for (int q = 0; q < panels.length; q++) {
        ds[q] = dy.get(NDArrayIndex.all(), cols(panels[q], b));
        ts[q] = rowsOf(p, slots[q], 1, b).transpose();
      }
      d = Nd4j.concat(1, ds);
      t = Nd4j.concat(0, ts);
    }
    INDArray prod = d.mmul(t);
    if (panels.length > 1) {
      release(d, t);
    }
    return prod;
  }

  /**
   * Frees temporaries at once. The per-panel temporaries (gathered inputs, partial products) are
   * created outside any workspace and released here, so a pass holds those of one panel at a time:
   * inside DL4J's training workspaces they would all live until the layer's scope closes, and as
   * ordinary detached arrays until the garbage collector runs. Views of the caller's arrays are
   * left alone.
   */
  private static void release(INDArray... arrays) {
    for (INDArray a : arrays) {
      if (a != null && !a.isView() && a.closeable() && !a.wasClosed()) {
        a.close();
      }
    }
  }

  /** Whether {@link #gatherX} concatenates (more than one run of block rows), i.e. copies. */
  private static boolean fresh(PackedLayout layout, int s0, int k) {
    for (int q = 1; q < k; q++) {
      if (layout.blockRowOf(s0 + q) != layout.blockRowOf(s0 + q - 1) + 1) {
        return true;
      }
    }
    return false;
  }

  /** X_j: the input columns of the block rows of panel slots s0 .. s0 + k, runs merged. */
  private static INDArray gatherX(INDArray x, PackedLayout layout, int s0, int k) {
    int b = layout.blockSize();
    List<INDArray> parts = new ArrayList<>();
    int q = 0;
    while (q < k) {
      int first = layout.blockRowOf(s0 + q);
      int run = 1;
      while (q + run < k && layout.blockRowOf(s0 + q + run) == first + run) {
        run++;
      }
      parts.add(x.get(NDArrayIndex.all(), NDArrayIndex.interval(first * b, (first + run) * b)));
      q += run;
    }
    return parts.size() == 1 ? parts.get(0) : Nd4j.concat(1, parts.toArray(new INDArray[0]));
  }

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
    if (layout == null) {
      throw new IllegalArgumentException("layout = null is not allowed; allowed: a PackedLayout");
    }
  }

  private static void checkShape(String name, INDArray a, long rows, long cols) {
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

  /** The packed values as a [K b, b] matrix view (a flat or already-shaped contiguous array). */
  private static INDArray asMatrix(String name, INDArray packed, PackedLayout layout) {
    if (packed == null
        || packed.length() != layout.packedLength()
        || !packed.dataType().isFPType()) {
      throw new IllegalArgumentException(
          name
              + " = "
              + (packed == null ? "null" : packed.dataType() + Arrays.toString(packed.shape()))
              + " is not allowed; allowed: "
              + layout.packedLength()
              + " floating-point values (shape "
              + Arrays.toString(layout.packedShape())
              + ") for "
              + layout);
    }
    long[] shape = layout.packedShape();
    if (!Shape.hasDefaultStridesForShape(packed) || packed.elementWiseStride() != 1) {
      throw new IllegalArgumentException(
          name
              + " = "
              + packed.shapeInfoToString().replace('\n', ' ')
              + " is not contiguous; allowed: a contiguous [K b, b] row-major or flat array");
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
}
