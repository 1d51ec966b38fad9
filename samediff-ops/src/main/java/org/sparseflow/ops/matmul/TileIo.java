package org.sparseflow.ops.matmul;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;

/**
 * Copies between the ND4J operands (native memory, any strides) and the Java tiles of {@link
 * VectorBlockKernels}: token rows in, row-major or transposed, output rows and packed weight
 * gradients out.
 */
final class TileIo {

  /** Rows per step of the tile transpose (8 source rows of up to 4096 floats stay in L1). */
  static final int TRANSPOSE_ROWS = 8;

  private TileIo() {}

  /** dst [rows x cols] row-major (row stride ld) = src rows r0 .. r0+rows (strides rs, cs). */
  static void readRows(
      FloatBuffer src, long rs, long cs, int r0, int rows, int cols, float[] dst, int ld) {
    if (cs == 1) {
      if (rs == cols && ld == cols) {
        src.get((int) (r0 * rs), dst, 0, rows * cols);
      } else {
        for (int r = 0; r < rows; r++) {
          src.get((int) ((r0 + r) * rs), dst, r * ld, cols);
        }
      }
      return;
    }
    float[] line = new float[rows];
    for (int c = 0; c < cols; c++) {
      if (rs == 1) {
        src.get((int) (r0 + c * cs), line, 0, rows);
      } else {
        for (int r = 0; r < rows; r++) {
          line[r] = src.get((int) ((r0 + r) * rs + c * cs));
        }
      }
      for (int r = 0; r < rows; r++) {
        dst[r * ld + c] = line[r];
      }
    }
  }

  /**
   * dst [cols x rows] (column c of the source rows at dst[c * ld]) = src rows r0 .. r0+rows
   * (strides rs, cs), i.e. the tile transposed.
   */
  static void readRowsTransposed(
      FloatBuffer src,
      long rs,
      long cs,
      int r0,
      int rows,
      int cols,
      float[] dst,
      int ld,
      float[] lines) {
    if (rs == 1) {
      // column-major source: each column of the tile is contiguous
      for (int c = 0; c < cols; c++) {
        src.get((int) (r0 + c * cs), dst, c * ld, rows);
      }
      return;
    }
    // rows are read TRANSPOSE_ROWS at a time and written out column by column, so the stores run
    // along dst (a scalar scatter row by row missed L1 on every store: ~15% of the forward)

    for (int rb = 0; rb < rows; rb += TRANSPOSE_ROWS) {
      int nr = Math.min(TRANSPOSE_ROWS, rows - rb);
      for (int r = 0; r < nr; r++) {
        if (cs == 1) {
          src.get((int) ((r0 + rb + r) * rs), lines, r * cols, cols);
        } else {
          for (int c = 0; c < cols; c++) {
            lines[r * cols + c] = src.get((int) ((r0 + rb + r) * rs + c * cs));
          }
        }
      }
      if (nr == TRANSPOSE_ROWS) {
        for (int c = 0; c < cols; c++) {
          int d = c * ld + rb;
          dst[d] = lines[c];
          dst[d + 1] = lines[cols + c];
          dst[d + 2] = lines[2 * cols + c];
          dst[d + 3] = lines[3 * cols + c];
          dst[d + 4] = lines[4 * cols + c];
          dst[d + 5] = lines[5 * cols + c];
          dst[d + 6] = lines[6 * cols + c];
          dst[d + 7] = lines[7 * cols + c];
        }
      } else {
        for (int c = 0; c < cols; c++) {
          for (int r = 0; r < nr; r++) {
            dst[c * ld + rb + r] = lines[r * cols + c];
          }
        }
      }
    }
  }

  /** dst rows r0 .. r0+rows (strides rs, cs) = src [rows x cols] row-major (row stride ld). */
  static void writeRows(
      FloatBuffer dst, long rs, long cs, int r0, int rows, int cols, float[] src, int ld) {
    if (cs == 1) {
      if (rs == cols && ld == cols) {
        dst.put((int) (r0 * rs), src, 0, rows * cols);
      } else {
        for (int r = 0; r < rows; r++) {
          dst.put((int) ((r0 + r) * rs), src, r * ld, cols);
        }
      }
      return;
    }
    float[] line = new float[rows];
    for (int c = 0; c < cols; c++) {
      for (int r = 0; r < rows; r++) {
        line[r] = src[r * ld + c];
      }
      if (rs == 1) {
        dst.put((int) (r0 + c * cs), line, 0, rows);
      } else {
        for (int r = 0; r < rows; r++) {
          dst.put((int) ((r0 + r) * rs + c * cs), line[r]);
        }
      }
    }
  }

  /**
   * Writes the packed kept blocks (layout of p) into the dense matrix dW: a row-major dW is written
   * row by row with zeros outside the kept blocks (so it need not be cleared first); other layouts
   * get the kept blocks only.
   */
  static void writeBlocks(PackedBlocks p, float[] vals, FloatBuffer out, INDArray dW, int b) {
    long rs = dW.stride(0);
    long cs = dW.stride(1);
    if (cs == 1) {
      // row-major: block rows in parallel (16 MB of output at N = 4096 was a serial tail of the
      // backward on 2 threads), each a strip of b rows built with zeros outside kept blocks
      int cols = (int) dW.size(1);
      int blockRows = (int) (dW.size(0) / b);
      float[][] rowBufs = new float[BlockSparseKernels.threads()][];
      BlockSparseKernels.parallelFor(
          blockRows,
          (worker, i) -> {
            if (rowBufs[worker] == null) {
              rowBufs[worker] = new float[b * cols];
            }
            float[] rowBuf = rowBufs[worker];
            Arrays.fill(rowBuf, 0f);
            for (int j = 0; j < p.panels(); j++) {
              int q = Arrays.binarySearch(p.other[j], i);
              if (q >= 0) {
                int src = (p.start[j] + q * b) * b;
                for (int r = 0; r < b; r++) {
                  System.arraycopy(vals, src + r * b, rowBuf, r * cols + j * b, b);
                }
              }
            }
            for (int r = 0; r < b; r++) {
              out.put((int) ((long) (i * b + r) * rs), rowBuf, r * cols, cols);
            }
          });
      return;
    }
    float[] line = new float[b];
    for (int j = 0; j < p.panels(); j++) {
      for (int q = 0; q < p.other[j].length; q++) {
        int row0 = p.other[j][q] * b;
        int src = (p.start[j] + q * b) * b;
        for (int c = 0; c < b; c++) {
          for (int r = 0; r < b; r++) {
            line[r] = vals[src + r * b + c];
          }
          if (rs == 1) {
            out.put((int) (row0 + ((long) j * b + c) * cs), line, 0, b);
          } else {
            for (int r = 0; r < b; r++) {
              out.put((int) ((row0 + r) * rs + ((long) j * b + c) * cs), line[r]);
            }
          }
        }
      }
    }
  }

  /** A float view of the memory an fp32 matrix (or view) spans. */
  static FloatBuffer view(INDArray a) {
    if (a.dataType() != DataType.FLOAT) {
      throw new IllegalStateException("vector kernels need FLOAT, got " + a.dataType());
    }
    long extent = (a.size(0) - 1) * a.stride(0) + (a.size(1) - 1) * a.stride(1) + 1;
    return RawPointers.floatBuffer(NativeAddress.of(a), extent);
  }

  /**
   * True when the storing kernels can write y: row-major with unit column stride, and every byte
   * offset of its extent fits an int.
   */
  static boolean storable(INDArray y) {
    long extent = (y.size(0) - 1) * y.stride(0) + y.size(1);
    return y.stride(1) == 1 && y.stride(0) >= y.size(1) && extent * 4 < Integer.MAX_VALUE;
  }

  /** A native-order byte view of the memory a row-major fp32 matrix spans. */
  static ByteBuffer bytes(INDArray y) {
    long extent = (y.size(0) - 1) * y.stride(0) + y.size(1);
    return RawPointers.byteBuffer(NativeAddress.of(y), extent * 4);
  }

  /** True when an array of this shape and strides fits a float view (int indices). */
  static boolean viewable(INDArray a) {
    long extent = (a.size(0) - 1) * a.stride(0) + (a.size(1) - 1) * a.stride(1) + 1;
    return a.stride(0) >= 0 && a.stride(1) >= 0 && extent < Integer.MAX_VALUE;
  }
}
