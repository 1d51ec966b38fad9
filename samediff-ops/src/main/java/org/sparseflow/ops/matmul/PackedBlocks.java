package org.sparseflow.ops.matmul;

import java.nio.FloatBuffer;
import java.util.Arrays;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * The kept b x b blocks of a block-sparse weight W [rows, cols], packed into one float array by
 * panel, with an index list per panel. This is the layout the vector kernels read, and the form in
 * which kept blocks can later be stored instead of a dense W (issue 23: memory proportional to
 * density).
 *
 * <ul>
 *   <li>{@link #byColumn}: panel j holds the kept blocks of block column j from top to bottom, each
 *       as b rows of b values, so packed row s is W[idx[j][s], j*b .. j*b+b) and idx[j][s] is the W
 *       row (the column of x it multiplies in y = x W).
 *   <li>{@link #transpose}: panel i holds the kept blocks of block row i from left to right, each
 *       transposed, so packed row s is W[i*b .. i*b+b, idx[i][s]] and idx[i][s] is the W column
 *       (the column of dy it multiplies in dx = dy W^T).
 * </ul>
 */
final class PackedBlocks {

  final int b;

  /** start[p] .. start[p + 1]: the packed rows (of b values) of panel p. */
  final int[] start;

  /** Per panel, the source row (by column) or column (transposed) of each packed row. */
  final int[][] idx;

  /** Panel p's block q holds the block (blockRow, blockCol) = (other[p][q], p) or (p, other). */
  final int[][] other;

  final float[] values;

  private PackedBlocks(int b, int[] start, int[][] idx, int[][] other, float[] values) {
    this.b = b;
    this.start = start;
    this.idx = idx;
    this.other = other;
    this.values = values;
  }

  int panels() {
    return idx.length;
  }

  /**
   * Kept blocks already packed by column (the order of {@code org.sparseflow.ops.packed}'s
   * storage): block slot s is values[s*b*b ..], panel j holds slots panelStart[j] ..
   * panelStart[j+1], and slotBlockRows[s] is slot s's block row. The values are used, not copied.
   */
  static PackedBlocks ofPanels(int b, int[] panelStart, int[] slotBlockRows, float[] values) {
    int bc = panelStart.length - 1;
    int[] start = new int[bc + 1];
    int[][] idx = new int[bc][];
    int[][] other = new int[bc][];
    for (int j = 0; j < bc; j++) {
      int n = panelStart[j + 1] - panelStart[j];
      start[j + 1] = panelStart[j + 1] * b;
      other[j] = Arrays.copyOfRange(slotBlockRows, panelStart[j], panelStart[j + 1]);
      idx[j] = new int[n * b];
      for (int q = 0; q < n; q++) {
        for (int kk = 0; kk < b; kk++) {
          idx[j][q * b + kk] = other[j][q] * b + kk;
        }
      }
    }
    if (values.length != panelStart[bc] * b * b) {
      throw new IllegalArgumentException(
          "values has "
              + values.length
              + " floats; allowed: "
              + panelStart[bc] * b * b
              + " (kept blocks x b x b)");
    }
    return new PackedBlocks(b, start, idx, other, values);
  }

  /** Packs the kept blocks of w (read through a float view with strides rs, cs) by column. */
  static PackedBlocks byColumn(FloatBuffer w, long rs, long cs, BlockMask mask) {
    int b = mask.blockSize();
    int br = mask.blockRows();
    int bc = mask.blockCols();
    int[] start = new int[bc + 1];
    int[][] idx = new int[bc][];
    int[][] other = new int[bc][];
    for (int j = 0; j < bc; j++) {
      int n = 0;
      for (int i = 0; i < br; i++) {
        if (mask.isBlockKept(i, j)) {
          n++;
        }
      }
      other[j] = new int[n];
      idx[j] = new int[n * b];
      n = 0;
      for (int i = 0; i < br; i++) {
        if (mask.isBlockKept(i, j)) {
          other[j][n] = i;
          for (int kk = 0; kk < b; kk++) {
            idx[j][n * b + kk] = i * b + kk;
          }
          n++;
        }
      }
      start[j + 1] = start[j] + n * b;
    }
    float[] values = new float[start[bc] * b];
    // block columns on the kernel threads: a serial copy was ~2 % of a 2-thread backward
    BlockSparseKernels.parallelFor(
        bc,
        (worker, j) -> {
          float[] col = rs == 1 && cs != 1 ? new float[b] : null;
          for (int q = 0; q < other[j].length; q++) {
            int row0 = other[j][q] * b;
            int dst = (start[j] + q * b) * b;
            if (cs == 1) {
              for (int kk = 0; kk < b; kk++) {
                w.get((int) ((row0 + kk) * rs + (long) j * b), values, dst + kk * b, b);
              }
            } else if (rs == 1) {
              for (int c = 0; c < b; c++) {
                w.get((int) (row0 + ((long) j * b + c) * cs), col, 0, b);
                for (int kk = 0; kk < b; kk++) {
                  values[dst + kk * b + c] = col[kk];
                }
              }
            } else {
              for (int kk = 0; kk < b; kk++) {
                for (int c = 0; c < b; c++) {
                  values[dst + kk * b + c] =
                      w.get((int) ((row0 + kk) * rs + ((long) j * b + c) * cs));
                }
              }
            }
          }
        });
    return new PackedBlocks(b, start, idx, other, values);
  }

  /** The same kept blocks packed by block row with each block transposed (see class comment). */
  PackedBlocks transpose(int blockRows) {
    int[] count = new int[blockRows];
    for (int[] rows : other) {
      for (int i : rows) {
        count[i]++;
      }
    }
    int[] tStart = new int[blockRows + 1];
    int[][] tIdx = new int[blockRows][];
    int[][] tOther = new int[blockRows][];
    for (int i = 0; i < blockRows; i++) {
      tStart[i + 1] = tStart[i] + count[i] * b;
      tIdx[i] = new int[count[i] * b];
      tOther[i] = new int[count[i]];
    }
    float[] tValues = new float[values.length];
    int[] fill = new int[blockRows];
    int[][] slot = new int[other.length][]; // block (other[j][q], j)'s place in its block row
    for (int j = 0;
        j < other.length;
        j++) { // block columns in order: each row's blocks ascend in j
      slot[j] = new int[other[j].length];
      for (int q = 0; q < other[j].length; q++) {
        int i = other[j][q];
        int n = fill[i]++;
        slot[j][q] = n;
        tOther[i][n] = j;
        for (int c = 0; c < b; c++) {
          tIdx[i][n * b + c] = j * b + c;
        }
      }
    }
    BlockSparseKernels.parallelFor(
        other.length,
        (worker, j) -> {
          for (int q = 0; q < other[j].length; q++) {
            int i = other[j][q];
            int src = (start[j] + q * b) * b;
            int dst = (tStart[i] + slot[j][q] * b) * b;
            for (int c = 0; c < b; c++) {
              for (int kk = 0; kk < b; kk++) {
                tValues[dst + c * b + kk] = values[src + kk * b + c];
              }
            }
          }
        });
    return new PackedBlocks(b, tStart, tIdx, tOther, tValues);
  }
}
