package org.sparseflow.ops.packed;

import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The loops of {@link PackedBlockLinear} on Java arrays (row-major), float and double: per kept
 * block (i, j) with values V [b, b], y[n, j] += x[n, i] V, dV = sum_n x[n, i]^T dy[n, j] and dx[n,
 * i] += dy[n, j] V^T. The innermost loops run over the b contiguous columns of a block, which the
 * JIT compiles to vector instructions. Work is proportional to the kept blocks; rows of x are split
 * over threads where the outputs are per row (y, dx) and dV is reduced per thread.
 */
final class PackedKernels {
  private PackedKernels() {}

  /**
   * Whether the Vector API loops serve this layout: the {@code jdk.incubator.vector} module is
   * present (and {@code -Dsparseflow.vectorKernels=false} not set) and the block size is a multiple
   * of the vector length.
   */
  static boolean vectorApplies(PackedLayout l) {
    return VectorSupport.AVAILABLE && l.blockSize() % PackedVectorKernels.lanes() == 0;
  }

  /** y [n, cols] = x [n, rows] W, W the packed blocks v of layout l. */
  static void forward(float[] x, float[] v, float[] y, int n, PackedLayout l) {
    if (vectorApplies(l)) {
      PackedVectorKernels.forward(x, v, y, n, l, blockRows(l), blockCols(l));
      return;
    }
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.rows(
        n,
        (r0, r1) -> {
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                float a = x[xb + k];
                int vk = vb + k * b;
                for (int c = 0; c < b; c++) {
                  y[yb + c] += a * v[vk + c];
                }
              }
            }
          }
        });
  }

  static void forward(double[] x, double[] v, double[] y, int n, PackedLayout l) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.rows(
        n,
        (r0, r1) -> {
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                double a = x[xb + k];
                int vk = vb + k * b;
                for (int c = 0; c < b; c++) {
                  y[yb + c] += a * v[vk + c];
                }
              }
            }
          }
        });
  }

  /** dv (packed) = x^T dy on the kept blocks. */
  static void weightGrad(float[] x, float[] dy, float[] dv, int n, PackedLayout l) {
    if (vectorApplies(l)) {
      PackedVectorKernels.weightGrad(x, dy, dv, n, l, blockRows(l), blockCols(l));
      return;
    }
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.reduce(
        n,
        dv.length,
        (r0, r1, acc) -> {
          float[] out = (float[]) acc;
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                float a = x[xb + k];
                int vk = vb + k * b;
                for (int c = 0; c < b; c++) {
                  out[vk + c] += a * dy[yb + c];
                }
              }
            }
          }
        },
        dv);
  }

  static void weightGrad(double[] x, double[] dy, double[] dv, int n, PackedLayout l) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.reduce(
        n,
        dv.length,
        (r0, r1, acc) -> {
          double[] out = (double[]) acc;
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                double a = x[xb + k];
                int vk = vb + k * b;
                for (int c = 0; c < b; c++) {
                  out[vk + c] += a * dy[yb + c];
                }
              }
            }
          }
        },
        dv);
  }

  /** dx [n, rows] = dy W^T on the kept blocks. */
  static void inputGrad(float[] dy, float[] v, float[] dx, int n, PackedLayout l) {
    if (vectorApplies(l)) {
      PackedVectorKernels.inputGrad(
          dy, transposeBlocks(v, l.blockSize()), dx, n, l, blockRows(l), blockCols(l));
      return;
    }
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.rows(
        n,
        (r0, r1) -> {
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                int vk = vb + k * b;
                float acc = 0f;
                for (int c = 0; c < b; c++) {
                  acc += dy[yb + c] * v[vk + c];
                }
                dx[xb + k] += acc;
              }
            }
          }
        });
  }

  static void inputGrad(double[] dy, double[] v, double[] dx, int n, PackedLayout l) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int[] bi = blockRows(l);
    int[] bj = blockCols(l);
    Parallel.rows(
        n,
        (r0, r1) -> {
          for (int r = r0; r < r1; r++) {
            int xo = r * rows;
            int yo = r * cols;
            for (int s = 0; s < bi.length; s++) {
              int xb = xo + bi[s] * b;
              int yb = yo + bj[s] * b;
              int vb = s * b * b;
              for (int k = 0; k < b; k++) {
                int vk = vb + k * b;
                double acc = 0;
                for (int c = 0; c < b; c++) {
                  acc += dy[yb + c] * v[vk + c];
                }
                dx[xb + k] += acc;
              }
            }
          }
        });
  }

  /** Each b x b block of packed values transposed in place of the block. */
  private static float[] transposeBlocks(float[] v, int b) {
    float[] t = new float[v.length];
    for (int base = 0; base < v.length; base += b * b) {
      for (int k = 0; k < b; k++) {
        for (int c = 0; c < b; c++) {
          t[base + c * b + k] = v[base + k * b + c];
        }
      }
    }
    return t;
  }

  private static int[] blockRows(PackedLayout l) {
    int[] out = new int[l.keptBlocks()];
    for (int s = 0; s < out.length; s++) {
      out[s] = l.blockRowOf(s);
    }
    return out;
  }

  private static int[] blockCols(PackedLayout l) {
    int[] out = new int[l.keptBlocks()];
    for (int j = 0; j < l.blockCols(); j++) {
      for (int s = l.panelStart(j); s < l.panelStart(j + 1); s++) {
        out[s] = j;
      }
    }
    return out;
  }
}
