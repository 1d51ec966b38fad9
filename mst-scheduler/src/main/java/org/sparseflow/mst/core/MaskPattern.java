package org.sparseflow.mst.core;

import java.util.Objects;

/**
 * What a topology update keeps or drops: single elements, b×b blocks, or N:M groups (n kept out of
 * every m consecutive input rows of a column). The string forms match samediff-ops {@code
 * PatternSpec}: {@code "unstructured"}, {@code "block16"}, {@code "2:4"}. Weights are [rows = nIn,
 * cols = nOut], row-major here.
 */
public final class MaskPattern {

  /** Kind of sparsity structure. */
  public enum Kind {
    UNSTRUCTURED,
    BLOCK,
    NM
  }

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

  public static MaskPattern block(int size) {
    if (size < 1) {
      throw Args.bad("blockSize", size, "an integer >= 1 (typically 8, 16, 32 or 64)");
    }
    return new MaskPattern(Kind.BLOCK, size, 0, 0);
  }

  public static MaskPattern nm(int n, int m) {
    if (m < 1 || n < 1 || n > m) {
      throw Args.bad("N:M", n + ":" + m, "1 <= N <= M");
    }
    return new MaskPattern(Kind.NM, 1, n, m);
  }

  /** Parses "unstructured", "blockB" (e.g. block16) or "N:M" (e.g. 2:4). */
  public static MaskPattern parse(String s) {
    String allowed = "\"unstructured\", \"block<B>\" (e.g. block16) or \"<N>:<M>\" (e.g. 2:4)";
    if (s == null) {
      throw Args.bad("pattern", null, allowed);
    }
    String t = s.trim().toLowerCase(java.util.Locale.ROOT);
    try {
      if (t.equals("unstructured") || t.equals("element")) {
        return UNSTRUCTURED;
      }
      if (t.startsWith("block")) {
        return block(Integer.parseInt(t.substring(5)));
      }
      int c = t.indexOf(':');
      if (c > 0) {
        return nm(Integer.parseInt(t.substring(0, c)), Integer.parseInt(t.substring(c + 1)));
      }
    } catch (NumberFormatException e) {
      throw Args.bad("pattern", s, allowed);
    }
    throw Args.bad("pattern", s, allowed);
  }

  public Kind kind() {
    return kind;
  }

  public int blockSize() {
    return blockSize;
  }

  public int n() {
    return n;
  }

  public int m() {
    return m;
  }

  /** Fixed density of an N:M pattern, or NaN when the density is free. */
  public double fixedDensity() {
    return kind == Kind.NM ? (double) n / m : Double.NaN;
  }

  /** Throws if a [rows, cols] weight cannot carry this pattern. */
  public void checkShape(String layer, long rows, long cols) {
    if (kind == Kind.BLOCK && (rows % blockSize != 0 || cols % blockSize != 0)) {
      throw Args.bad(
          "shape of " + layer,
          "[" + rows + ", " + cols + "]",
          "both dimensions divisible by the block size " + blockSize);
    }
    if (kind == Kind.NM && rows % m != 0) {
      throw Args.bad(
          "shape of " + layer,
          "[" + rows + ", " + cols + "]",
          "nIn divisible by M = " + m + " for pattern " + this);
    }
  }

  /** Number of prunable units of a [rows, cols] weight (elements or blocks). */
  public long unitCount(long rows, long cols) {
    return kind == Kind.BLOCK ? (rows / blockSize) * (cols / blockSize) : rows * cols;
  }

  @Override
  public String toString() {
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
    return o instanceof MaskPattern && o.toString().equals(toString());
  }

  @Override
  public int hashCode() {
    return Objects.hash(toString());
  }
}
