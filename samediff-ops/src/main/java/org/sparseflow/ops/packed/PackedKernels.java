package org.sparseflow.ops.packed;

/**
 * The fallback loops of {@link PackedBlockLinear} on double arrays (row-major): per kept block (i,
 * j) with values V [b, b], y[n, j] += x[n, i] V, dV = sum_n x[n, i]^T dy[n, j] and dx[n, i] +=
 * dy[n, j] V^T. The innermost loops run over the b contiguous columns of a block, which the JIT
 * compiles to vector instructions. Work is proportional to the kept blocks; rows of x are split
 * over threads where the outputs are per row (y, dx) and dV is reduced per thread.
 */
final class PackedKernels {
  private PackedKernels() {}

  /** y [n, cols] += x [n, rows] W, W the packed blocks v of layout l. */
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
          double[] out = acc;
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
