package org.sparseflow.ops.attention;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** Shared helpers: random inputs and a plain-Java dense masked attention reference. */
final class AttentionTestUtil {

  private AttentionTestUtil() {}

  static INDArray rand(long seed, DataType type, long... shape) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.randn(type, shape);
  }

  /** Max |a-b| / max(|b|, tiny). */
  static double relErr(INDArray a, INDArray b) {
    double diff =
        a.castTo(DataType.DOUBLE).sub(b.castTo(DataType.DOUBLE)).amaxNumber().doubleValue();
    double norm = b.castTo(DataType.DOUBLE).amaxNumber().doubleValue();
    return diff / Math.max(norm, 1e-300);
  }

  /**
   * Plain nested-loop reference softmax(scale q k^T + mask) v in double, masked with an element
   * mask per head ({@code masks[h][i][j]}, h taken modulo masks.length). Independent of ND4J matmul
   * and of the kernel.
   */
  static double[][][][] reference(
      INDArray q, INDArray k, INDArray v, boolean[][][] masks, double scale) {
    int bsz = (int) q.size(0), heads = (int) q.size(1), t = (int) q.size(2), d = (int) q.size(3);
    double[][][][] out = new double[bsz][heads][t][d];
    double[] qa = q.dup('c').data().asDouble(),
        ka = k.dup('c').data().asDouble(),
        va = v.dup('c').data().asDouble();
    for (int b = 0; b < bsz; b++) {
      for (int h = 0; h < heads; h++) {
        boolean[][] m = masks[h % masks.length];
        long base = ((long) b * heads + h) * t;
        for (int i = 0; i < t; i++) {
          double[] s = new double[t];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < t; j++) {
            if (!m[i][j]) {
              continue;
            }
            double dot = 0;
            for (int x = 0; x < d; x++) {
              dot += qa[(int) ((base + i) * d + x)] * ka[(int) ((base + j) * d + x)];
            }
            s[j] = dot * scale;
            max = Math.max(max, s[j]);
          }
          double sum = 0;
          for (int j = 0; j < t; j++) {
            if (m[i][j]) {
              s[j] = Math.exp(s[j] - max);
              sum += s[j];
            }
          }
          for (int j = 0; j < t; j++) {
            if (m[i][j]) {
              for (int x = 0; x < d; x++) {
                out[b][h][i][x] += s[j] / sum * va[(int) ((base + j) * d + x)];
              }
            }
          }
        }
      }
    }
    return out;
  }

  static INDArray toArray(double[][][][] a) {
    return Nd4j.createFromArray(a);
  }

  static boolean[][] causal(int t) {
    boolean[][] m = new boolean[t][t];
    for (int i = 0; i < t; i++) {
      for (int j = 0; j <= i; j++) {
        m[i][j] = true;
      }
    }
    return m;
  }

  static boolean[][][] masksOf(BlockLayout layout) {
    boolean[][][] m = new boolean[layout.numHeads()][][];
    for (int h = 0; h < m.length; h++) {
      m[h] = layout.elementMask(h);
    }
    return m;
  }
}
