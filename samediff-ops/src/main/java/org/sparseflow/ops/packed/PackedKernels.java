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
    int b = l.blockSize();
    perRow(
        n,
        l,
        (xb, yb, vb) -> {
          for (int k = 0; k < b; k++) {
            double a = x[xb + k];
            int vk = vb + k * b;
            for (int c = 0; c < b; c++) {
              y[yb + c] += a * v[vk + c];
            }
          }
        });
  }

  /** dv (packed like v) += x [n, rows]^T dy [n, cols] on the kept blocks of layout l. */
  static void weightGrad(double[] x, double[] dy, double[] dv, int n, PackedLayout l) {
    Blocks blocks = new Blocks(l);
    int b = l.blockSize();
    Parallel.reduce(
        n,
        dv.length,
        (r0, r1, acc) ->
            blocks.visit(
                r0,
                r1,
                (xb, yb, vb) -> {
                  for (int k = 0; k < b; k++) {
                    double a = x[xb + k];
                    int vk = vb + k * b;
                    for (int c = 0; c < b; c++) {
                      acc[vk + c] += a * dy[yb + c];
                    }
                  }
                }),
        dv);
  }

  /** dx [n, rows] += dy [n, cols] W^T, W the packed blocks v of layout l. */
  static void inputGrad(double[] dy, double[] v, double[] dx, int n, PackedLayout l) {
    int b = l.blockSize();
    perRow(
        n,
        l,
        (xb, yb, vb) -> {
          for (int k = 0; k < b; k++) {
            int vk = vb + k * b;
            double acc = 0;
            for (int c = 0; c < b; c++) {
              acc += dy[yb + c] * v[vk + c];
            }
            dx[xb + k] += acc;
          }
        });
  }

  /** Runs {@code block} on every kept block of every row, the rows split over threads. */
  private static void perRow(int n, PackedLayout l, Block block) {
    Blocks blocks = new Blocks(l);
    Parallel.rows(n, (r0, r1) -> blocks.visit(r0, r1, block));
  }

  /** The work on one kept block of one activation row, given the offsets of its operands. */
  private interface Block {
    /**
     * @param xb offset of the block's b entries in the row of x (or dx)
     * @param yb offset of the block's b entries in the row of y (or dy)
     * @param vb offset of the block's b * b values in v (or dv)
     */
    void apply(int xb, int yb, int vb);
  }

  /** The kept blocks of a layout with their block row and column, walked row by row. */
  private static final class Blocks {
    private final int rows;
    private final int cols;
    private final int b;
    private final int[] bi;
    private final int[] bj;

    Blocks(PackedLayout l) {
      rows = (int) l.rows();
      cols = (int) l.cols();
      b = l.blockSize();
      bi = new int[l.keptBlocks()];
      for (int s = 0; s < bi.length; s++) {
        bi[s] = l.blockRowOf(s);
      }
      bj = new int[l.keptBlocks()];
      for (int j = 0; j < l.blockCols(); j++) {
        for (int s = l.panelStart(j); s < l.panelStart(j + 1); s++) {
          bj[s] = j;
        }
      }
    }

    /** Applies {@code block} to every kept block of activation rows r0 .. r1. */
    void visit(int r0, int r1, Block block) {
      for (int r = r0; r < r1; r++) {
        int xo = r * rows;
        int yo = r * cols;
        for (int s = 0; s < bi.length; s++) {
          block.apply(xo + bi[s] * b, yo + bj[s] * b, s * b * b);
        }
      }
    }
  }
}
