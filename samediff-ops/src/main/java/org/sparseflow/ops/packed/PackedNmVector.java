package org.sparseflow.ops.packed;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.sparseflow.ops.vector.ExactVectorMath;

/**
 * The fp32 loops of {@link PackedNmLinear} with the JDK Vector API, on the same transposed
 * activations as {@link PackedNmKernels}. The forward keeps a tile of four vectors of one output
 * row yT[c] in registers while it runs over the kept weights of column c; the weight gradient is a
 * four-accumulator dot product per kept weight; the input gradient adds v[k] dyT[c] into the m rows
 * of dxT of one group, a tile of the samples at a time so that those rows stay in the L1 cache.
 * Only loaded when the {@code jdk.incubator.vector} module is present.
 */
final class PackedNmVector {
  private PackedNmVector() {}

  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();
  private static final int TILE = 4 * L;
  private static final int DX_TILE = 256;

  static void forward(float[] xT, float[] v, float[] yT, int ns, PackedNmLayout l) {
    int cols = (int) l.cols();
    int n = l.n();
    int m = l.m();
    int groups = l.groups();
    int full = ns - ns % TILE;
    Parallel.rows(
        cols,
        (c0, c1) -> {
          int[] rowOff = new int[groups * n];
          float[] w = new float[groups * n];
          for (int c = c0; c < c1; c++) {
            for (int g = 0; g < groups; g++) {
              for (int s = 0; s < n; s++) {
                int k = (g * n + s) * cols + c;
                rowOff[g * n + s] = (g * m + l.offset(k)) * ns;
                w[g * n + s] = v[k];
              }
            }
            int yo = c * ns;
            for (int i = 0; i < full; i += TILE) {
              FloatVector a0 = FloatVector.zero(SP);
              FloatVector a1 = a0;
              FloatVector a2 = a0;
              FloatVector a3 = a0;
              for (int q = 0; q < rowOff.length; q++) {
                FloatVector b = FloatVector.broadcast(SP, w[q]);
                int xo = rowOff[q] + i;
                a0 = FloatVector.fromArray(SP, xT, xo).fma(b, a0);
                a1 = FloatVector.fromArray(SP, xT, xo + L).fma(b, a1);
                a2 = FloatVector.fromArray(SP, xT, xo + 2 * L).fma(b, a2);
                a3 = FloatVector.fromArray(SP, xT, xo + 3 * L).fma(b, a3);
              }
              a0.intoArray(yT, yo + i);
              a1.intoArray(yT, yo + i + L);
              a2.intoArray(yT, yo + i + 2 * L);
              a3.intoArray(yT, yo + i + 3 * L);
            }
            for (int i = full; i < ns; i++) {
              float acc = 0;
              for (int q = 0; q < rowOff.length; q++) {
                acc += w[q] * xT[rowOff[q] + i];
              }
              yT[yo + i] = acc;
            }
          }
        });
  }

  static void weightGrad(float[] xT, float[] dyT, float[] dv, int ns, PackedNmLayout l) {
    int cols = (int) l.cols();
    int n = l.n();
    int m = l.m();
    int groups = l.groups();
    int full = ns - ns % TILE;
    Parallel.rows(
        cols,
        (c0, c1) -> {
          for (int c = c0; c < c1; c++) {
            int dyo = c * ns;
            for (int g = 0; g < groups; g++) {
              for (int s = 0; s < n; s++) {
                int k = (g * n + s) * cols + c;
                int xo = (g * m + l.offset(k)) * ns;
                FloatVector a0 = FloatVector.zero(SP);
                FloatVector a1 = a0;
                FloatVector a2 = a0;
                FloatVector a3 = a0;
                for (int i = 0; i < full; i += TILE) {
                  a0 =
                      FloatVector.fromArray(SP, xT, xo + i)
                          .fma(FloatVector.fromArray(SP, dyT, dyo + i), a0);
                  a1 =
                      FloatVector.fromArray(SP, xT, xo + i + L)
                          .fma(FloatVector.fromArray(SP, dyT, dyo + i + L), a1);
                  a2 =
                      FloatVector.fromArray(SP, xT, xo + i + 2 * L)
                          .fma(FloatVector.fromArray(SP, dyT, dyo + i + 2 * L), a2);
                  a3 =
                      FloatVector.fromArray(SP, xT, xo + i + 3 * L)
                          .fma(FloatVector.fromArray(SP, dyT, dyo + i + 3 * L), a3);
                }
                float acc = ExactVectorMath.sum(a0.add(a1).add(a2.add(a3)));
                for (int i = full; i < ns; i++) {
                  acc += xT[xo + i] * dyT[dyo + i];
                }
                dv[k] = acc;
              }
            }
          }
        });
  }

  static void inputGrad(float[] dyT, float[] v, float[] dxT, int ns, PackedNmLayout l) {
    int cols = (int) l.cols();
    int n = l.n();
    int m = l.m();
    Parallel.rows(
        l.groups(),
        (g0, g1) -> {
          for (int g = g0; g < g1; g++) {
            for (int t0 = 0; t0 < ns; t0 += DX_TILE) {
              int t1 = Math.min(ns, t0 + DX_TILE);
              int vEnd = t0 + (t1 - t0) / L * L;
              for (int c = 0; c < cols; c++) {
                int dyo = c * ns;
                for (int s = 0; s < n; s++) {
                  int k = (g * n + s) * cols + c;
                  float w = v[k];
                  int xo = (g * m + l.offset(k)) * ns;
                  FloatVector b = FloatVector.broadcast(SP, w);
                  for (int i = t0; i < vEnd; i += L) {
                    FloatVector.fromArray(SP, dyT, dyo + i)
                        .fma(b, FloatVector.fromArray(SP, dxT, xo + i))
                        .intoArray(dxT, xo + i);
                  }
                  for (int i = vEnd; i < t1; i++) {
                    dxT[xo + i] += w * dyT[dyo + i];
                  }
                }
              }
            }
          }
        });
  }
}
