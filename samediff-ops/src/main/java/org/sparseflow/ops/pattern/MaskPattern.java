package org.sparseflow.ops.pattern;

import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The project's one definition of a weight sparsity pattern: single elements, b x b blocks (b in
 * 8/16/32/64, the sizes the kernels support), or N:M groups (n kept out of every m consecutive
 * input rows of each output column, the layout of NVIDIA 2:4 sparse tensor cores for y = x W with W
 * stored [nIn, nOut]). Framework-free (no ND4J types), so the framework-free MST core and the
 * layers share one vocabulary and one validation; {@link PatternSpec} is its Jackson/ND4J view.
 *
 * <p>String forms: {@code unstructured} (alias {@code element}), {@code block8} .. {@code block64},
 * {@code n:m} (e.g. {@code 2:4}); case-insensitive.
 */
public final class MaskPattern {

  /** What a mask keeps. */
  public enum Kind {
    UNSTRUCTURED,
    BLOCK,
    NM
  }

  /** Block sizes allowed in a {@link Kind#BLOCK} pattern. */
  public static final Set<Integer> ALLOWED_BLOCK_SIZES = Set.of(8, 16, 32, 64);

  /** Largest group size allowed in a {@link Kind#NM} pattern. */
  public static final int MAX_NM_GROUP = 64;

  static final String ALLOWED_FORMS =
      "unstructured, block8, block16, block32, block64, n:m (e.g. 2:4)";

  public static final MaskPattern UNSTRUCTURED = new MaskPattern(Kind.UNSTRUCTURED, 1, 0, 0);

  private final Kind kind;
  private final int blockSize;
  private final int n;
  private final int m;

  private MaskPattern(Kind kind, int blockSize, int n, int m) {
    this.kind = kind;
    this.blockSize = blockSize;
    this.n = n;
    this.m = m;
  }

  /** A b x b block pattern; b must be one of {@link #ALLOWED_BLOCK_SIZES}. */
  public static MaskPattern block(int size) {
    check(Kind.BLOCK, size, 0, 0);
    return new MaskPattern(Kind.BLOCK, size, 0, 0);
  }

  /** An N:M pattern; 2 <= m <= {@link #MAX_NM_GROUP} and 1 <= n <= m. */
  public static MaskPattern nm(int n, int m) {
    check(Kind.NM, 0, n, m);
    return new MaskPattern(Kind.NM, 1, n, m);
  }

  /**
   * The pattern with these fields (the ones the kind does not use are ignored).
   *
   * @throws IllegalArgumentException naming the offending field, its value and what is allowed
   */
  public static MaskPattern of(Kind kind, int blockSize, int n, int m) {
    check(kind, blockSize, n, m);
    switch (kind) {
      case BLOCK:
        return block(blockSize);
      case NM:
        return nm(n, m);
      default:
        return UNSTRUCTURED;
    }
  }

  /**
   * The one validation of pattern fields.
   *
   * @throws IllegalArgumentException naming the offending field, its value and what is allowed
   */
  public static void check(Kind kind, int blockSize, int n, int m) {
    if (kind == null) {
      throw new IllegalArgumentException("kind = null; allowed: " + Arrays.toString(Kind.values()));
    }
    if (kind == Kind.BLOCK && !ALLOWED_BLOCK_SIZES.contains(blockSize)) {
      throw new IllegalArgumentException(
          "blockSize = " + blockSize + " is not allowed; allowed: 8, 16, 32, 64");
    }
    if (kind == Kind.NM) {
      if (m < 2 || m > MAX_NM_GROUP) {
        throw new IllegalArgumentException(
            "m = " + m + " is not allowed; allowed: 2.." + MAX_NM_GROUP);
      }
      if (n < 1 || n > m) {
        throw new IllegalArgumentException(
            "n = " + n + " is not allowed; allowed: 1..m (m = " + m + ")");
      }
    }
  }

  /**
   * Parses {@code unstructured}, {@code block<b>} (b in 8/16/32/64) or {@code n:m};
   * case-insensitive.
   *
   * @throws IllegalArgumentException naming the value and the allowed forms
   */
  public static MaskPattern parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("pattern = null; allowed: " + ALLOWED_FORMS);
    }
    String t = text.trim().toLowerCase(Locale.ROOT);
    try {
      if (t.equals("unstructured") || t.equals("element")) {
        return UNSTRUCTURED;
      }
      if (t.startsWith("block")) {
        return block(Integer.parseInt(t.substring("block".length())));
      }
      int colon = t.indexOf(':');
      if (colon > 0) {
        return nm(
            Integer.parseInt(t.substring(0, colon)), Integer.parseInt(t.substring(colon + 1)));
      }
    } catch (NumberFormatException e) {
      // fall through to the error below
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("pattern = '" + text + "': " + e.getMessage(), e);
    }
    throw new IllegalArgumentException(
        "pattern = '" + text + "' is unknown; allowed: " + ALLOWED_FORMS);
  }

  public Kind kind() {
    return kind;
  }

  /** Block edge for {@link Kind#BLOCK}; 1 otherwise (a unit is one element). */
  public int blockSize() {
    return blockSize;
  }

  public int n() {
    return n;
  }

  public int m() {
    return m;
  }

  /** Fixed density of an N:M pattern (n/m), or NaN when the density is free. */
  public double fixedDensity() {
    return kind == Kind.NM ? (double) n / m : Double.NaN;
  }

  /**
   * Throws if a [rows, cols] weight cannot carry this pattern.
   *
   * @param layer the weight's name, used in the message
   */
  public void checkShape(String layer, long rows, long cols) {
    checkShape("weight '" + layer + "': ", rows, cols, "rows (nIn)", "cols (nOut)");
  }

  /**
   * Throws if a [rows, cols] weight cannot carry this pattern: block patterns need both dimensions
   * to be multiples of the block size, N:M patterns the rows to be a multiple of m.
   *
   * @param where prefix of the message naming the place (e.g. "layer 'fc1': "), may be empty
   * @param rowsName name of the rows in the message (e.g. "nIn")
   * @param colsName name of the columns in the message (e.g. "nOut")
   * @throws IllegalArgumentException naming the dimension, its value and what is allowed
   */
  public void checkShape(String where, long rows, long cols, String rowsName, String colsName) {
    if (kind == Kind.BLOCK) {
      checkMultiple(where, rowsName, rows, blockSize, "the block size");
      checkMultiple(where, colsName, cols, blockSize, "the block size");
    } else if (kind == Kind.NM) {
      checkMultiple(where, rowsName, rows, m, "the group size m =");
    }
  }

  private void checkMultiple(String where, String name, long value, int unit, String what) {
    if (value % unit != 0) {
      throw new IllegalArgumentException(
          where
              + name
              + " = "
              + value
              + " is not divisible by "
              + what
              + " "
              + unit
              + " of pattern "
              + this
              + "; allowed: multiples of "
              + unit);
    }
  }

  /** Number of prunable units of a [rows, cols] weight (elements or blocks). */
  public long unitCount(long rows, long cols) {
    return kind == Kind.BLOCK ? (rows / blockSize) * (cols / blockSize) : rows * cols;
  }

  /** Inverse of {@link #parse(String)}. */
  @Override
  public String toString() {
    return format(kind, blockSize, n, m);
  }

  /** The string form of a pattern with these fields. */
  static String format(Kind kind, int blockSize, int n, int m) {
    switch (kind) {
      case BLOCK:
        return "block" + blockSize;
      case NM:
        return n + ":" + m;
      default:
        return "unstructured";
    }
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof MaskPattern)) {
      return false;
    }
    MaskPattern p = (MaskPattern) o;
    return kind == p.kind && blockSize == p.blockSize && n == p.n && m == p.m;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, blockSize, n, m);
  }
}
