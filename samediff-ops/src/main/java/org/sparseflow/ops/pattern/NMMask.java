package org.sparseflow.ops.pattern;

import java.util.SplittableRandom;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * N:M mask: for every output column c and every group of m consecutive input rows [g*m, (g+1)*m),
 * exactly n entries are kept (arXiv 2102.04010 / NVIDIA 2:4 for y = x W, W [nIn, nOut]).
 */
public class NMMask extends ElementMask {

  private final int n;
  private final int m;

  private NMMask(long rows, long cols, int n, int m, boolean[] flags) {
    super(rows, cols, flags);
    this.n = n;
    this.m = m;
    checkGroups(flags);
  }

  private static void checkArgs(long rows, long cols, int n, int m) {
    PatternSpec.nm(n, m);
    MaskBuilders.checkDims(rows, cols);
    MaskBuilders.checkDivides("rows", rows, m);
  }

  private void checkGroups(boolean[] flags) {
    for (long g = 0; g < rows / m; g++) {
      for (long c = 0; c < cols; c++) {
        int kept = 0;
        for (int k = 0; k < m; k++) {
          if (flags[(int) ((g * m + k) * cols + c)]) {
            kept++;
          }
        }
        if (kept != n) {
          throw new IllegalArgumentException(
              "group (rows "
                  + g * m
                  + ".."
                  + (g * m + m - 1)
                  + ", col "
                  + c
                  + ") keeps "
                  + kept
                  + " entries; an "
                  + n
                  + ":"
                  + m
                  + " mask must keep exactly "
                  + n);
        }
      }
    }
  }

  static NMMask random(long rows, long cols, int n, int m, long seed) {
    checkArgs(rows, cols, n, m);
    SplittableRandom rnd = new SplittableRandom(seed);
    boolean[] flags = new boolean[(int) (rows * cols)];
    for (long g = 0; g < rows / m; g++) {
      for (long c = 0; c < cols; c++) {
        boolean[] pick = MaskBuilders.randomK(m, n, rnd);
        for (int k = 0; k < m; k++) {
          flags[(int) ((g * m + k) * cols + c)] = pick[k];
        }
      }
    }
    return new NMMask(rows, cols, n, m, flags);
  }

  static NMMask fromScores(INDArray scores, int n, int m) {
    long rows = scores.size(0);
    long cols = scores.size(1);
    checkArgs(rows, cols, n, m);
    double[] s = MaskBuilders.readRowMajor("scores", scores);
    boolean[] flags = new boolean[s.length];
    double[] group = new double[m];
    for (long g = 0; g < rows / m; g++) {
      for (long c = 0; c < cols; c++) {
        for (int k = 0; k < m; k++) {
          group[k] = s[(int) ((g * m + k) * cols + c)];
        }
        boolean[] pick = MaskBuilders.topK(group, n);
        for (int k = 0; k < m; k++) {
          flags[(int) ((g * m + k) * cols + c)] = pick[k];
        }
      }
    }
    return new NMMask(rows, cols, n, m, flags);
  }

  static NMMask fromDense(INDArray mask01, int n, int m) {
    checkArgs(mask01.size(0), mask01.size(1), n, m);
    double[] v = MaskBuilders.readRowMajor("mask", mask01);
    boolean[] flags = new boolean[v.length];
    for (int i = 0; i < v.length; i++) {
      flags[i] = v[i] != 0.0;
    }
    return new NMMask(mask01.size(0), mask01.size(1), n, m, flags);
  }

  static NMMask fromJsonFields(long rows, long cols, int n, int m, String bits) {
    checkArgs(rows, cols, n, m);
    int total = (int) (rows * cols);
    return new NMMask(rows, cols, n, m, unpack(MaskBuilders.fromBase64(bits, total), total));
  }

  public int n() {
    return n;
  }

  public int m() {
    return m;
  }

  @Override
  public PatternSpec spec() {
    return PatternSpec.nm(n, m);
  }
}
