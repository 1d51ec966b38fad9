package org.sparseflow.ops.packed;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Float loops of {@link PackedKernels} on the JDK Vector API, for block sizes that are a multiple
 * of the vector length: each output vector (b / L per block row) stays in a register while it
 * accumulates over the block's b inputs. Loaded only when {@code jdk.incubator.vector} is present
 * (see {@link PackedKernels#vectorApplies}).
 */
final class PackedVectorKernels {
  private PackedVectorKernels() {}

  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

  static int lanes() {
    return S.length();
  }

  /** y [n, cols] += x [n, rows] W on the kept blocks. */
  static void forward(float[] x, float[] v, float[] y, int n, PackedLayout l, int[] bi, int[] bj) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int lanes = S.length();
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
              for (int c0 = 0; c0 < b; c0 += lanes) {
                FloatVector acc = FloatVector.fromArray(S, y, yb + c0);
                for (int k = 0; k < b; k++) {
                  acc =
                      FloatVector.fromArray(S, v, vb + k * b + c0)
                          .fma(FloatVector.broadcast(S, x[xb + k]), acc);
                }
                acc.intoArray(y, yb + c0);
              }
            }
          }
        });
  }

  /** dv += x^T dy on the kept blocks; each dv vector accumulates over the rows in a register. */
  static void weightGrad(
      float[] x, float[] dy, float[] dv, int n, PackedLayout l, int[] bi, int[] bj) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int lanes = S.length();
    Parallel.rows(
        bi.length,
        (s0, s1) -> {
          for (int s = s0; s < s1; s++) {
            int vb = s * b * b;
            for (int k = 0; k < b; k++) {
              int xk = bi[s] * b + k;
              for (int c0 = 0; c0 < b; c0 += lanes) {
                int vk = vb + k * b + c0;
                int yc = bj[s] * b + c0;
                FloatVector acc = FloatVector.fromArray(S, dv, vk);
                for (int r = 0; r < n; r++) {
                  acc =
                      FloatVector.fromArray(S, dy, r * cols + yc)
                          .fma(FloatVector.broadcast(S, x[r * rows + xk]), acc);
                }
                acc.intoArray(dv, vk);
              }
            }
          }
        });
  }

  /**
   * dx [n, rows] += dy W^T on the kept blocks, with vt the packed blocks each transposed
   * (vt[s][c][k] = v[s][k][c]), so that a dx vector accumulates over the block's b outputs in a
   * register.
   */
  static void inputGrad(
      float[] dy, float[] vt, float[] dx, int n, PackedLayout l, int[] bi, int[] bj) {
    int rows = (int) l.rows();
    int cols = (int) l.cols();
    int b = l.blockSize();
    int lanes = S.length();
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
              for (int k0 = 0; k0 < b; k0 += lanes) {
                FloatVector acc = FloatVector.fromArray(S, dx, xb + k0);
                for (int c = 0; c < b; c++) {
                  acc =
                      FloatVector.fromArray(S, vt, vb + c * b + k0)
                          .fma(FloatVector.broadcast(S, dy[yb + c]), acc);
                }
                acc.intoArray(dx, xb + k0);
              }
            }
          }
        });
  }
}
