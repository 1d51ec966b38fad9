package org.sparseflow.ops.packed;

import java.util.Arrays;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Which n of every m weights are kept in an N:M-sparse W [rows, cols] (groups of m consecutive
 * rows, per column, as {@link NMMask} defines them), and where each kept weight sits in the packed
 * value array.
 *
 * <p>Packed values: a row-major [rows / m * n, cols] matrix. Packed row {@code g * n + s} holds,
 * for every column c, the s-th kept weight (in ascending row order) of group g in column c. So the
 * values take n / m of the dense weight's bytes.
 *
 * <p>Indices: for the kept weight at packed position {@code k = (g * n + s) * cols + c}, its row
 * offset inside the group, {@code 0 .. m - 1}, stored with {@link #bitsPerIndex()} bits (1 for m =
 * 2, 2 for m <= 4, 4 for m <= 16, 8 for m <= 64) in int words, little end first: index k lives in
 * word {@code k * bits / 32} at bit {@code (k * bits) % 32}. Offsets ascend strictly inside a
 * group; unused bits of the last word are zero. For 2:4 that is 2 bits per kept weight, 1 bit (1/8
 * byte) per dense weight. The kernels decode the words directly; nothing wider is materialised.
 */
public final class PackedNmLayout implements PackedShape {
  private final long rows;
  private final long cols;
  private final int n;
  private final int m;
  private final int bits;
  private final int[] words;

  private PackedNmLayout(long rows, long cols, int n, int m, int[] words) {
    this.rows = rows;
    this.cols = cols;
    this.n = n;
    this.m = m;
    this.bits = bitsFor(m);
    this.words = words;
  }

  /** Bits per stored index for group size m: 1, 2, 4 or 8. */
  public static int bitsFor(int m) {
    if (m <= 2) {
      return 1;
    }
    if (m <= 4) {
      return 2;
    }
    return m <= 16 ? 4 : 8;
  }

  /** Number of int words holding the indices of a [rows, cols] n:m weight. */
  public static long wordCount(long rows, long cols, int n, int m) {
    long kept = rows / m * n * cols;
    return (kept * bitsFor(m) + 31) / 32;
  }

  /**
   * A layout from its index words (as {@link #indexWords()} returns them).
   *
   * @throws IllegalArgumentException naming the argument if n:m is not a valid pattern, m does not
   *     divide rows, the word count differs, an offset is out of order or a spare bit is set
   */
  public static PackedNmLayout of(long rows, long cols, int n, int m, int[] words) {
    return new PackedNmLayout(rows, cols, n, m, validated(rows, cols, n, m, words));
  }

  /**
   * The checks of {@link #of(long, long, int, int, int[])}; returns a copy of the words.
   *
   * @throws IllegalArgumentException as {@link #of(long, long, int, int, int[])} does
   */
  public static int[] validated(long rows, long cols, int n, int m, int[] words) {
    PatternSpec.nm(n, m);
    if (rows < 1 || cols < 1 || rows % m != 0) {
      throw new IllegalArgumentException(
          "shape = ["
              + rows
              + ", "
              + cols
              + "] is not allowed for "
              + n
              + ":"
              + m
              + "; allowed: positive sizes with rows a multiple of "
              + m);
    }
    long kept = rows / m * n * cols;
    if (kept > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "shape = [" + rows + ", " + cols + "] keeps " + kept + " weights; allowed: < 2^31");
    }
    long need = wordCount(rows, cols, n, m);
    if (words == null || words.length != need) {
      throw new IllegalArgumentException(
          "indexWords has "
              + (words == null ? "null" : words.length + " words")
              + "; allowed: "
              + need
              + " int words ("
              + bitsFor(m)
              + " bits per kept weight) for ["
              + rows
              + ", "
              + cols
              + "] "
              + n
              + ":"
              + m);
    }
    int[] w = words.clone();
    PackedNmLayout l = new PackedNmLayout(rows, cols, n, m, w);
    int c = (int) cols;
    for (int g = 0; g < l.groups(); g++) {
      for (int col = 0; col < c; col++) {
        int prev = -1;
        for (int s = 0; s < n; s++) {
          int off = l.offset(((long) g * n + s) * c + col);
          if (off <= prev || off >= m) {
            throw new IllegalArgumentException(
                "indexWords: group "
                    + g
                    + " column "
                    + col
                    + " has offset "
                    + off
                    + " at slot "
                    + s
                    + "; allowed: strictly ascending offsets in [0, "
                    + m
                    + ")");
          }
          prev = off;
        }
      }
    }
    int usedBits = (int) ((kept * l.bits) % 32);
    if (usedBits != 0 && (w[w.length - 1] >>> usedBits) != 0) {
      throw new IllegalArgumentException(
          "indexWords: the last word has bits set past index " + (kept - 1) + "; allowed: zeros");
    }
    return w;
  }

  /** The layout of an N:M mask's kept weights. */
  public static PackedNmLayout of(NMMask mask) {
    if (mask == null) {
      throw new IllegalArgumentException("mask = null is not allowed; allowed: an NMMask");
    }
    int n = mask.n();
    int m = mask.m();
    long rows = mask.rows();
    int cols = (int) mask.cols();
    int bits = bitsFor(m);
    int[] w = new int[(int) wordCount(rows, cols, n, m)];
    for (int g = 0; g < rows / m; g++) {
      for (int c = 0; c < cols; c++) {
        int s = 0;
        for (int r = 0; r < m; r++) {
          if (mask.isKept((long) g * m + r, c)) {
            long k = ((long) g * n + s++) * cols + c;
            long bit = k * bits;
            w[(int) (bit >>> 5)] |= r << (int) (bit & 31);
          }
        }
      }
    }
    return new PackedNmLayout(rows, cols, n, m, w);
  }

  /** The kept weights as an {@link NMMask}. */
  public NMMask toMask() {
    double[] flags = new double[(int) (rows * cols)];
    int c = (int) cols;
    for (int g = 0; g < groups(); g++) {
      for (int s = 0; s < n; s++) {
        for (int col = 0; col < c; col++) {
          int r = g * m + offset(((long) g * n + s) * c + col);
          flags[r * c + col] = 1;
        }
      }
    }
    INDArray mask01 = Nd4j.createFromArray(flags).reshape('c', rows, cols);
    return (NMMask) PatternSpec.nm(n, m).fromDense(mask01);
  }

  /** Row offset inside its group (0 .. m - 1) of the kept weight at packed position k. */
  public int offset(long k) {
    long bit = k * bits;
    return (words[(int) (bit >>> 5)] >>> (int) (bit & 31)) & ((1 << bits) - 1);
  }

  /** The W row of the kept weight at packed row {@code packedRow}, column {@code col}. */
  public int rowOf(int packedRow, int col) {
    return packedRow / n * m + offset((long) packedRow * cols + col);
  }

  public long rows() {
    return rows;
  }

  public long cols() {
    return cols;
  }

  public int n() {
    return n;
  }

  public int m() {
    return m;
  }

  /** The pattern, e.g. 2:4. */
  public MaskPattern pattern() {
    return MaskPattern.nm(n, m);
  }

  /** Number of groups along the rows: rows / m. */
  public int groups() {
    return (int) (rows / m);
  }

  /** Rows of the packed value matrix: rows / m * n. */
  public int packedRows() {
    return groups() * n;
  }

  /** Number of packed values: rows / m * n * cols. */
  @Override
  public long packedLength() {
    return (long) packedRows() * cols;
  }

  /** Shape of the packed array as a matrix: [rows / m * n, cols], row-major. */
  @Override
  public long[] packedShape() {
    return new long[] {packedRows(), cols};
  }

  /** Fraction of kept weights, n / m. */
  public double density() {
    return (double) n / m;
  }

  /** Bits per stored index. */
  public int bitsPerIndex() {
    return bits;
  }

  /** Bytes of the index words: 4 per word. */
  public long indexBytes() {
    return 4L * words.length;
  }

  /** The index words (a copy), the form the layer configuration stores. */
  public int[] indexWords() {
    return words.clone();
  }

  /** The index words (shared: do not modify). */
  int[] words() {
    return words;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PackedNmLayout l
        && rows == l.rows
        && cols == l.cols
        && n == l.n
        && m == l.m
        && Arrays.equals(words, l.words);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Long.hashCode(rows) + Long.hashCode(cols)) + 17 * n + m
        ^ Arrays.hashCode(words);
  }

  @Override
  public String toString() {
    return "PackedNmLayout([" + rows + ", " + cols + "], " + n + ":" + m + ")";
  }
}
