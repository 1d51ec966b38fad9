package org.sparseflow.ops.packed;

import java.util.Arrays;
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
    try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      INDArray xt = x.castTo(p.dataType()).transpose().dup('c'); // [rows, N]: gathers pull rows
      for (int j = 0; j < layout.blockCols(); j++) {
        int s0 = layout.panelStart(j);
        int k = layout.panelStart(j + 1) - s0;
        if (k == 0) {
          continue;
        }
        INDArray xjt = Nd4j.pullRows(xt, 1, layout.panelInputRows(j)); // X_j^T [k b, N]
        INDArray prod = xjt.transpose().mmul(rowsOf(p, s0, k, b));
        y.get(NDArrayIndex.all(), cols(j, b)).assign(prod);
        release(prod, xjt);
      }
      release(xt);
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
    INDArray dx =
        inputGrad ? Nd4j.create(p.dataType(), new long[] {x.size(0), layout.rows()}, 'c') : null;
    try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      INDArray xt = x.castTo(p.dataType()).transpose().dup('c'); // [rows, N]
      INDArray dyt = dy.castTo(p.dataType()).transpose().dup('c'); // [cols, N]
      for (int j = 0; j < layout.blockCols(); j++) {
        int s0 = layout.panelStart(j);
        int k = layout.panelStart(j + 1) - s0;
        if (k == 0) {
          continue;
        }
        INDArray xjt = Nd4j.pullRows(xt, 1, layout.panelInputRows(j)); // [k b, N]
        INDArray dyj = blockRows(dyt, j, b).transpose(); // dy[:, j] [N, b]
        INDArray prod = xjt.mmul(dyj);
        rowsOf(dp, s0, k, b).assign(prod);
        release(prod, xjt);
      }
      release(xt);
      if (inputGrad) {
        // each packed block transposed in place of the block: rows of the stacked V^T per block row
        long kept = layout.keptBlocks();
        INDArray pt =
            p.reshape('c', kept, b, b).permute(0, 2, 1).dup('c').reshape('c', kept * b, b);
        INDArray dxt = Nd4j.create(p.dataType(), new long[] {layout.rows(), x.size(0)}, 'c');
        for (int i = 0; i < layout.blockRows(); i++) {
          if (layout.rowPanels(i).length == 0) {
            continue;
          }
          INDArray dyg = Nd4j.pullRows(dyt, 1, layout.rowOutputRows(i)); // [k_i b, N]
          INDArray ti = Nd4j.pullRows(pt, 1, layout.rowPackedRows(i)); // [k_i b, b]
          INDArray prod = ti.transpose().mmul(dyg); // dx[:, i]^T [b, N]
          blockRows(dxt, i, b).assign(prod);
          release(prod, dyg, ti);
        }
        dx.assign(dxt.transpose());
        release(pt, dxt);
      }
      release(dyt);
    }
    return dx;
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

  /** Rows i b .. (i + 1) b of a new contiguous row-major matrix m [R, N], as a view. */
  private static INDArray blockRows(INDArray m, int i, int b) {
    long n = m.size(1);
    return Nd4j.create(m.data(), new long[] {b, n}, new long[] {n, 1}, m.offset() + i * b * n, 'c');
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
