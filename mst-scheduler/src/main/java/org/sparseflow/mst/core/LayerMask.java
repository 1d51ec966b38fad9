package org.sparseflow.mst.core;

import java.util.Arrays;
import java.util.Base64;
import java.util.BitSet;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * The current topology of one sparse weight [rows, cols]: which units (elements or blocks, per the
 * pattern) are active. Mutable only through {@link TopologyUpdater}; {@link #copy()} for snapshots.
 */
public final class LayerMask {
  private final String name;
  private final int rows;
  private final int cols;
  private final MaskPattern pattern;
  private final BitSet active;

  public LayerMask(String name, int rows, int cols, MaskPattern pattern, BitSet active) {
    if (rows < 1 || cols < 1) {
      throw Args.bad("shape of " + name, "[" + rows + ", " + cols + "]", "positive dimensions");
    }
    pattern.checkShape(name, rows, cols);
    this.name = name;
    this.rows = rows;
    this.cols = cols;
    this.pattern = pattern;
    this.active = (BitSet) active.clone();
  }

  /** All units active. */
  public static LayerMask dense(String name, int rows, int cols, MaskPattern pattern) {
    BitSet b = new BitSet();
    b.set(0, (int) pattern.unitCount(rows, cols));
    return new LayerMask(name, rows, cols, pattern, b);
  }

  /** Uniformly random units at the given density (N:M: a random n of every group of m). */
  public static LayerMask random(
      String name, int rows, int cols, MaskPattern pattern, double density, SplitMix64 rng) {
    Args.unit("density of " + name, density);
    pattern.checkShape(name, rows, cols);
    BitSet b = new BitSet();
    if (pattern.kind() == MaskPattern.Kind.NM) {
      int[] idx = new int[pattern.m()];
      for (int c = 0; c < cols; c++) {
        for (int g = 0; g < rows; g += pattern.m()) {
          for (int i = 0; i < idx.length; i++) {
            idx[i] = i;
          }
          rng.shuffleFirst(idx, idx.length, pattern.n());
          for (int i = 0; i < pattern.n(); i++) {
            b.set((g + idx[i]) * cols + c);
          }
        }
      }
    } else {
      int units = (int) pattern.unitCount(rows, cols);
      int k = (int) Math.round(density * units);
      int[] idx = new int[units];
      for (int i = 0; i < units; i++) {
        idx[i] = i;
      }
      rng.shuffleFirst(idx, units, k);
      for (int i = 0; i < k; i++) {
        b.set(idx[i]);
      }
    }
    return new LayerMask(name, rows, cols, pattern, b);
  }

  public String name() {
    return name;
  }

  public int rows() {
    return rows;
  }

  public int cols() {
    return cols;
  }

  public MaskPattern pattern() {
    return pattern;
  }

  public int unitCount() {
    return (int) pattern.unitCount(rows, cols);
  }

  public int activeUnits() {
    return active.cardinality();
  }

  public boolean isUnitActive(int unit) {
    return active.get(unit);
  }

  /** Active unit bits (a copy). */
  public BitSet activeBits() {
    return (BitSet) active.clone();
  }

  /** Fraction of kept elements. */
  public double density() {
    return (double) activeUnits() / unitCount();
  }

  public double sparsity() {
    return 1.0 - density();
  }

  /** Unit index of element (r, c). */
  public int unitOf(int r, int c) {
    if (pattern.kind() == MaskPattern.Kind.BLOCK) {
      int b = pattern.blockSize();
      return (r / b) * (cols / b) + c / b;
    }
    return r * cols + c;
  }

  public boolean isKept(int r, int c) {
    return active.get(unitOf(r, c));
  }

  /**
   * Expands per-unit values (blocks or elements, in unit order) to the row-major [rows, cols]
   * elements.
   */
  public float[] unitsToElements(float[] perUnit) {
    if (pattern.kind() != MaskPattern.Kind.BLOCK) {
      return perUnit.clone();
    }
    int b = pattern.blockSize();
    int blockCols = cols / b;
    float[] out = new float[rows * cols];
    for (int r = 0; r < rows; r++) {
      int unitRow = (r / b) * blockCols;
      for (int bc = 0; bc < blockCols; bc++) {
        Arrays.fill(out, r * cols + bc * b, r * cols + bc * b + b, perUnit[unitRow + bc]);
      }
    }
    return out;
  }

  /** Element-level 0/1 mask, row-major [rows * cols]. */
  public float[] toElementMask() {
    float[] out = new float[rows * cols];
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) {
        if (isKept(r, c)) {
          out[r * cols + c] = 1f;
        }
      }
    }
    return out;
  }

  public LayerMask copy() {
    return new LayerMask(name, rows, cols, pattern, active);
  }

  /** Compact string form of the active bits (Base64 of the bit set's little-endian bytes). */
  public String encodeBits() {
    return Base64.getEncoder().encodeToString(active.toByteArray());
  }

  public static BitSet decodeBits(String s) {
    return BitSet.valueOf(Base64.getDecoder().decode(s));
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LayerMask)) {
      return false;
    }
    LayerMask l = (LayerMask) o;
    return name.equals(l.name)
        && rows == l.rows
        && cols == l.cols
        && pattern.equals(l.pattern)
        && active.equals(l.active);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(new int[] {name.hashCode(), rows, cols, active.hashCode()});
  }

  @Override
  public String toString() {
    return "LayerMask{"
        + name
        + " ["
        + rows
        + "x"
        + cols
        + "] "
        + pattern
        + " density="
        + density()
        + "}";
  }
}
