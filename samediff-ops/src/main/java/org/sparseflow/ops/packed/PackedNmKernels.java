package org.sparseflow.ops.packed;

/**
 * The double-precision loops of {@link PackedNmLinear} on transposed (feature-major) activations:
 * xT [rows, N], dyT [cols, N], yT [cols, N], dxT [rows, N], all row-major, and packed values v
 * [rows / m * n, cols] with the index words of a {@link PackedNmLayout}.
 *
 * <p>With the activations transposed, every kept weight W[r, c] = v[k] is one scaled vector update
 * over the N samples: forward yT[c] += v[k] xT[r], input gradient dxT[r] += v[k] dyT[c], weight
 * gradient dv[k] = xT[r] . dyT[c]. The innermost loops run over N contiguous values, which the JIT
 * compiles to vector instructions. Work is proportional to the kept weights; the forward and the
 * weight gradient split the columns over threads, the input gradient the row groups (each group's m
 * rows of dxT belong to one thread).
 */
final class PackedNmKernels {
  private PackedNmKernels() {}

  /** yT [cols, nSamples] = (x W)^T for xT [rows, nSamples]. */
  static void forward(double[] xT, double[] v, double[] yT, int nSamples, PackedNmLayout l) {
    keptByColumn(
        l,
        nSamples,
        (k, xo, yo) -> {
          double w = v[k];
          for (int i = 0; i < nSamples; i++) {
            yT[yo + i] += w * xT[xo + i];
          }
        });
  }

  /** dv [packed] = the kept entries of x^T dy. */
  static void weightGrad(double[] xT, double[] dyT, double[] dv, int nSamples, PackedNmLayout l) {
    keptByColumn(
        l,
        nSamples,
        (k, xo, dyo) -> {
          double acc = 0;
          for (int i = 0; i < nSamples; i++) {
            acc += xT[xo + i] * dyT[dyo + i];
          }
          dv[k] = acc;
        });
  }

  /** The work on one kept weight v[k] = W[r, c]: xo, yo the offsets of rows xT[r] and yT[c]. */
  private interface Kept {
    void apply(int k, int xo, int yo);
  }

  /**
   * Applies {@code body} to every kept weight, column by column, the columns split over threads.
   */
  private static void keptByColumn(PackedNmLayout l, int nSamples, Kept body) {
    Parallel.rows((int) l.cols(), (c0, c1) -> keptByColumn(l, nSamples, c0, c1, body));
  }

  /** Applies {@code body} to the kept weights of columns c0 .. c1, column by column. */
  private static void keptByColumn(PackedNmLayout l, int nSamples, int c0, int c1, Kept body) {
    int cols = (int) l.cols();
    int n = l.n();
    int m = l.m();
    int groups = l.groups();
    for (int c = c0; c < c1; c++) {
      int yo = c * nSamples;
      for (int g = 0; g < groups; g++) {
        for (int s = 0; s < n; s++) {
          int k = (g * n + s) * cols + c;
          body.apply(k, (g * m + l.offset(k)) * nSamples, yo);
        }
      }
    }
  }

  /** dxT [rows, nSamples] = (dy W^T)^T. */
  static void inputGrad(double[] dyT, double[] v, double[] dxT, int nSamples, PackedNmLayout l) {
    int cols = (int) l.cols();
    int n = l.n();
    int m = l.m();
    Parallel.rows(
        l.groups(),
        (g0, g1) -> {
          for (int g = g0; g < g1; g++) {
            for (int c = 0; c < cols; c++) {
              int dyo = c * nSamples;
              for (int s = 0; s < n; s++) {
                int k = (g * n + s) * cols + c;
                double w = v[k];
                int xo = (g * m + l.offset(k)) * nSamples;
                for (int i = 0; i < nSamples; i++) {
                  dxT[xo + i] += w * dyT[dyo + i];
                }
              }
            }
          }
        });
  }
}
