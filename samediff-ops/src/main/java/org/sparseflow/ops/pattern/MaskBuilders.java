package org.sparseflow.ops.pattern;

import java.util.Arrays;
import java.util.Base64;
import java.util.SplittableRandom;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/** Shared validation and selection helpers for mask construction. */
final class MaskBuilders {

  private MaskBuilders() {}

  static void checkDensity(double density) {
    if (!(density > 0.0 && density <= 1.0)) {
      throw new IllegalArgumentException(
          "density = " + density + " is outside the allowed range (0, 1]");
    }
  }

  static void checkDims(long rows, long cols) {
    if (rows <= 0) {
      throw new IllegalArgumentException("rows = " + rows + "; allowed: >= 1");
    }
    if (cols <= 0) {
      throw new IllegalArgumentException("cols = " + cols + "; allowed: >= 1");
    }
    if (rows * cols > Integer.MAX_VALUE - 8L) {
      throw new IllegalArgumentException(
          "rows * cols = " + rows * cols + " is too large; allowed: < 2^31");
    }
  }

  static void checkDivides(String name, long dim, int unit) {
    if (dim <= 0 || dim % unit != 0) {
      throw new IllegalArgumentException(
          name
              + " = "
              + dim
              + " is not a positive multiple of "
              + unit
              + "; allowed: multiples of "
              + unit);
    }
  }

  static void checkMatrix(String name, INDArray a) {
    if (a == null) {
      throw new IllegalArgumentException(name + " = null; a rank-2 matrix is required");
    }
    if (a.rank() != 2) {
      throw new IllegalArgumentException(
          name + " has shape " + Arrays.toString(a.shape()) + "; allowed: rank 2 [rows, cols]");
    }
  }

  /** Row-major copy of a matrix as doubles; rejects NaN. */
  static double[] readRowMajor(String name, INDArray a) {
    checkMatrix(name, a);
    double[] v = a.castTo(DataType.DOUBLE).dup('c').data().asDouble();
    for (int i = 0; i < v.length; i++) {
      if (Double.isNaN(v[i])) {
        throw new IllegalArgumentException(
            name + " contains NaN at linear index " + i + "; allowed: finite values");
      }
    }
    return v;
  }

  /**
   * Indices of the k largest values, ties broken by the lower index. Returns a boolean selection
   * array.
   */
  static boolean[] topK(double[] scores, int k) {
    int len = scores.length;
    boolean[] keep = new boolean[len];
    if (k >= len) {
      Arrays.fill(keep, true);
      return keep;
    }
    double[] sorted = scores.clone();
    Arrays.sort(sorted);
    double threshold = sorted[len - k]; // k-th largest value
    int above = 0;
    for (double s : scores) {
      if (s > threshold) {
        above++;
      }
    }
    int equalNeeded = k - above;
    for (int i = 0; i < len; i++) {
      if (scores[i] > threshold) {
        keep[i] = true;
      } else if (scores[i] == threshold && equalNeeded > 0) {
        keep[i] = true;
        equalNeeded--;
      }
    }
    return keep;
  }

  /** Exactly k of n indices chosen uniformly at random. */
  static boolean[] randomK(int n, int k, SplittableRandom rnd) {
    boolean[] keep = new boolean[n];
    int[] idx = new int[n];
    for (int i = 0; i < n; i++) {
      idx[i] = i;
    }
    for (int i = 0; i < k; i++) {
      int j = i + rnd.nextInt(n - i);
      int t = idx[i];
      idx[i] = idx[j];
      idx[j] = t;
      keep[idx[i]] = true;
    }
    return keep;
  }

  /** Number of units kept at a density: round(density * units), at least 1. */
  static int keptCount(double density, long units) {
    long k = Math.round(density * units);
    return (int) Math.max(1, Math.min(units, k));
  }

  static long[] pack(boolean[] bits) {
    long[] words = new long[(bits.length + 63) >>> 6];
    for (int i = 0; i < bits.length; i++) {
      if (bits[i]) {
        words[i >>> 6] |= 1L << (i & 63);
      }
    }
    return words;
  }

  static String toBase64(long[] words, int nbits) {
    byte[] bytes = new byte[(nbits + 7) >>> 3];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) (words[i >>> 3] >>> ((i & 7) * 8));
    }
    return Base64.getEncoder().encodeToString(bytes);
  }

  static long[] fromBase64(String s, int nbits) {
    byte[] bytes;
    try {
      bytes = Base64.getDecoder().decode(s);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("bits is not valid base64: " + e.getMessage(), e);
    }
    if (bytes.length != (nbits + 7) >>> 3) {
      throw new IllegalArgumentException(
          "bits has " + bytes.length + " bytes; expected " + ((nbits + 7) >>> 3));
    }
    long[] words = new long[(nbits + 63) >>> 6];
    for (int i = 0; i < bytes.length; i++) {
      words[i >>> 3] |= (bytes[i] & 0xFFL) << ((i & 7) * 8);
    }
    return words;
  }
}
