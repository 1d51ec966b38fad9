package org.sparseflow.dataflow.graph;

import java.util.Locale;

/**
 * Sparsity metadata of a weight or an op: fraction of kept weights and the pattern string
 * ("unstructured", "block16", "2:4", ... as in the samediff-ops PatternSpec), plus the index bytes
 * the compressed layout carries per kept element.
 */
public record SparsityInfo(double density, String pattern) {

  public static final SparsityInfo DENSE = new SparsityInfo(1.0, "dense");

  public SparsityInfo {
    if (!(density > 0.0 && density <= 1.0)) {
      throw new IllegalArgumentException("density must be in (0, 1], got " + density);
    }
    if (pattern == null || pattern.isBlank()) {
      throw new IllegalArgumentException(
          "pattern must be non-empty (dense, unstructured, blockN, N:M), got '" + pattern + "'");
    }
    pattern = pattern.toLowerCase(Locale.ROOT);
    validatePattern(pattern);
  }

  public boolean isSparse() {
    return density < 1.0;
  }

  /** Index bytes stored per kept element of the compressed weight. */
  public double indexBytesPerNonZero() {
    if (!isSparse()) {
      return 0.0;
    }
    if (pattern.equals("unstructured")) {
      return 2.0; // 16-bit column index per kept element (CSR-like)
    }
    if (pattern.startsWith("block")) {
      int b = blockSize();
      return 4.0 / ((double) b * b); // one 32-bit block index per kept block
    }
    if (pattern.contains(":")) {
      int m = Integer.parseInt(pattern.substring(pattern.indexOf(':') + 1));
      int bits = 32 - Integer.numberOfLeadingZeros(Math.max(1, m - 1));
      return bits / 8.0; // position inside the group of m
    }
    return 0.0;
  }

  public int blockSize() {
    if (!pattern.startsWith("block")) {
      return 1;
    }
    return Integer.parseInt(pattern.substring(5));
  }

  /** Normalised pattern family: dense, unstructured, block, nm. */
  public String family() {
    if (pattern.equals("dense")) {
      return "dense";
    }
    if (pattern.equals("unstructured")) {
      return "unstructured";
    }
    if (pattern.startsWith("block")) {
      return "block";
    }
    return "nm";
  }

  static void validatePattern(String p) {
    if (p.equals("dense") || p.equals("unstructured")) {
      return;
    }
    if (p.startsWith("block")) {
      try {
        int b = Integer.parseInt(p.substring(5));
        if (b >= 1 && b <= 1024) {
          return;
        }
      } catch (NumberFormatException ignored) {
        // falls through to the error
      }
    }
    int colon = p.indexOf(':');
    if (colon > 0) {
      try {
        int n = Integer.parseInt(p.substring(0, colon));
        int m = Integer.parseInt(p.substring(colon + 1));
        if (n >= 1 && m > n) {
          return;
        }
      } catch (NumberFormatException ignored) {
        // falls through to the error
      }
    }
    throw new IllegalArgumentException(
        "pattern '"
            + p
            + "' is not one of dense, unstructured, block<N> (e.g. block16), N:M (e.g. 2:4)");
  }
}
