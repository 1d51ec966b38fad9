package org.sparseflow.ops.packed;

import java.util.Arrays;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * Which b x b blocks of a weight W [rows, cols] are kept, and where each kept block sits in the
 * packed value array.
 *
 * <p>Packed order ("by block column", the order of the vector kernels' panels): panel j holds the
 * kept blocks of block column j from top to bottom; each block is b rows of b values, row-major. So
 * the packed array, seen as [keptBlocks * b, b] row-major, has panel j as the contiguous rows
 * {@code panelStart(j) * b .. panelStart(j + 1) * b}, and that slice is the [k_j * b, b] matrix
 * that multiplies the gathered input columns of the panel's block rows.
 *
 * <p>The layout itself is stored as the row-major indices {@code i * blockCols + j} of the kept
 * blocks, ascending ({@link #keptRowMajor()}): 4 bytes per kept block, against 4 bytes per weight
 * for a dense float mask.
 */
public final class PackedLayout implements PackedShape {
  private final long rows;
  private final long cols;
  private final int b;
  private final int[] kept; // row-major block indices, ascending
  private final int[] panelStart; // [blockCols + 1], in blocks
  private final int[] panelRows; // block row of each packed block, in packed order
  private final int[][] rowPanels; // per block row: block columns of its kept blocks, ascending
  private final int[][] rowSlots; // per block row: packed index of each of those blocks
  private final int[][] panelInputRows; // per panel: W rows (x columns) of its packed rows
  private final int[][] rowOutputRows; // per block row: W columns (dy columns) of its kept blocks
  private final int[][] rowPackedRows; // per block row: packed rows of its kept blocks

  private PackedLayout(long rows, long cols, int b, int[] kept) {
    this.rows = rows;
    this.cols = cols;
    this.b = b;
    this.kept = kept;
    int br = blockRows();
    int bc = blockCols();
    panelStart = new int[bc + 1];
    int[] rowCount = new int[br];
    for (int k : kept) {
      panelStart[k % bc + 1]++;
      rowCount[k / bc]++;
    }
    for (int j = 0; j < bc; j++) {
      panelStart[j + 1] += panelStart[j];
    }
    panelRows = new int[kept.length];
    rowPanels = new int[br][];
    rowSlots = new int[br][];
    for (int i = 0; i < br; i++) {
      rowPanels[i] = new int[rowCount[i]];
      rowSlots[i] = new int[rowCount[i]];
    }
    int[] fill = Arrays.copyOf(panelStart, bc);
    int[] rowFill = new int[br];
    // kept ascends row-major, so within a panel the block rows ascend and within a row the panels
    for (int k : kept) {
      int i = k / bc;
      int j = k % bc;
      int slot = fill[j]++;
      panelRows[slot] = i;
      rowPanels[i][rowFill[i]] = j;
      rowSlots[i][rowFill[i]++] = slot;
    }
    panelInputRows = new int[bc][];
    for (int j = 0; j < bc; j++) {
      int k = panelStart[j + 1] - panelStart[j];
      panelInputRows[j] = new int[k * b];
      for (int q = 0; q < k; q++) {
        for (int r = 0; r < b; r++) {
          panelInputRows[j][q * b + r] = panelRows[panelStart[j] + q] * b + r;
        }
      }
    }
    rowOutputRows = new int[br][];
    rowPackedRows = new int[br][];
    for (int i = 0; i < br; i++) {
      int k = rowPanels[i].length;
      rowOutputRows[i] = new int[k * b];
      rowPackedRows[i] = new int[k * b];
      for (int q = 0; q < k; q++) {
        for (int r = 0; r < b; r++) {
          rowOutputRows[i][q * b + r] = rowPanels[i][q] * b + r;
          rowPackedRows[i][q * b + r] = rowSlots[i][q] * b + r;
        }
      }
    }
  }

  /**
   * A layout from the row-major indices {@code i * (cols / b) + j} of the kept blocks.
   *
   * @throws IllegalArgumentException naming the argument if b does not divide rows and cols, an
   *     index is out of range or repeated, or no block is kept
   */
  public static PackedLayout of(long rows, long cols, int blockSize, int[] keptRowMajor) {
    return new PackedLayout(rows, cols, blockSize, validated(rows, cols, blockSize, keptRowMajor));
  }

  /**
   * The checks of {@link #of(long, long, int, int[])} without building the layout's index tables:
   * returns the kept-block indices ascending (a copy), so configurations can be validated cheaply
   * as often as DL4J asks.
   *
   * @throws IllegalArgumentException as {@link #of(long, long, int, int[])} does
   */
  public static int[] validated(long rows, long cols, int blockSize, int[] keptRowMajor) {
    if (blockSize < 1) {
      throw new IllegalArgumentException(
          "blockSize = " + blockSize + " is not allowed; allowed: >= 1");
    }
    if (rows < 1 || cols < 1 || rows % blockSize != 0 || cols % blockSize != 0) {
      throw new IllegalArgumentException(
          "shape = ["
              + rows
              + ", "
              + cols
              + "] is not allowed for blockSize = "
              + blockSize
              + "; allowed: positive multiples of the block size");
    }
    if (keptRowMajor == null || keptRowMajor.length == 0) {
      throw new IllegalArgumentException(
          "keptRowMajor = "
              + (keptRowMajor == null ? "null" : "[]")
              + " is not allowed; allowed: at least one kept block index");
    }
    long nb = (rows / blockSize) * (cols / blockSize);
    if (nb > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "shape = [" + rows + ", " + cols + "] has " + nb + " blocks; allowed: < 2^31");
    }
    int[] sorted = keptRowMajor.clone();
    Arrays.sort(sorted);
    for (int k = 0; k < sorted.length; k++) {
      if (sorted[k] < 0 || sorted[k] >= nb || (k > 0 && sorted[k] == sorted[k - 1])) {
        throw new IllegalArgumentException(
            "keptRowMajor contains "
                + sorted[k]
                + (sorted[k] < 0 || sorted[k] >= nb ? " (out of range)" : " twice")
                + "; allowed: distinct block indices in [0, "
                + nb
                + ")");
      }
    }
    return sorted;
  }

  /** The layout of a block mask's kept blocks. */
  public static PackedLayout of(BlockMask mask) {
    if (mask == null) {
      throw new IllegalArgumentException("mask = null is not allowed; allowed: a BlockMask");
    }
    int[][] blocks = mask.keptBlocks();
    int[] idx = new int[blocks.length];
    for (int k = 0; k < blocks.length; k++) {
      idx[k] = blocks[k][0] * mask.blockCols() + blocks[k][1];
    }
    return of(mask.rows(), mask.cols(), mask.blockSize(), idx);
  }

  /** The kept blocks as a {@link BlockMask}. */
  public BlockMask toMask() {
    boolean[] flags = new boolean[blockRows() * blockCols()];
    for (int k : kept) {
      flags[k] = true;
    }
    return BlockMask.of(rows, cols, b, flags);
  }

  public long rows() {
    return rows;
  }

  public long cols() {
    return cols;
  }

  public int blockSize() {
    return b;
  }

  public int blockRows() {
    return (int) (rows / b);
  }

  public int blockCols() {
    return (int) (cols / b);
  }

  /** Number of kept blocks. */
  public int keptBlocks() {
    return kept.length;
  }

  /** Number of packed values: keptBlocks * b * b. */
  @Override
  public long packedLength() {
    return (long) kept.length * b * b;
  }

  /** Shape of the packed array as a matrix: [keptBlocks * b, b], row-major. */
  @Override
  public long[] packedShape() {
    return new long[] {(long) kept.length * b, b};
  }

  /** Fraction of kept weights. */
  public double density() {
    return (double) kept.length / ((long) blockRows() * blockCols());
  }

  /** Row-major indices of the kept blocks, ascending (a copy). */
  public int[] keptRowMajor() {
    return kept.clone();
  }

  /** First packed block of panel (block column) j; {@code panelStart(blockCols())} = total. */
  public int panelStart(int j) {
    return panelStart[j];
  }

  /** panelStart(0 .. blockCols()) as one array (shared: do not modify). */
  int[] panelStarts() {
    return panelStart;
  }

  /** The block row of every packed slot, in packed order (shared: do not modify). */
  int[] slotBlockRows() {
    return panelRows;
  }

  /**
   * The packed slot of the block with row-major index {@code unit} ({@code i * blockCols() + j}),
   * or -1 when that block is not kept.
   */
  public int slotOf(int unit) {
    int bc = blockCols();
    int i = unit / bc;
    if (unit < 0 || i >= blockRows()) {
      return -1;
    }
    int q = Arrays.binarySearch(rowPanels[i], unit % bc);
    return q >= 0 ? rowSlots[i][q] : -1;
  }

  /** Block row of the packed block at {@code slot}. */
  public int blockRowOf(int slot) {
    return panelRows[slot];
  }

  /** Block columns of the kept blocks of block row i, ascending (shared array: do not modify). */
  int[] rowPanels(int i) {
    return rowPanels[i];
  }

  /** Packed slots of the kept blocks of block row i, in {@link #rowPanels} order (shared). */
  int[] rowSlots(int i) {
    return rowSlots[i];
  }

  /** Panel j's input indices: the W row (x column) of each of its packed rows (shared). */
  int[] panelInputRows(int j) {
    return panelInputRows[j];
  }

  /** Block row i's output indices: the W columns (dy columns) of its kept blocks (shared). */
  int[] rowOutputRows(int i) {
    return rowOutputRows[i];
  }

  /** Block row i's packed rows: rows slot b .. slot b + b of each of its kept blocks (shared). */
  int[] rowPackedRows(int i) {
    return rowPackedRows[i];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PackedLayout l
        && rows == l.rows
        && cols == l.cols
        && b == l.b
        && Arrays.equals(kept, l.kept);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Long.hashCode(rows) + Long.hashCode(cols)) + 17 * b + Arrays.hashCode(kept);
  }

  @Override
  public String toString() {
    return "PackedLayout(["
        + rows
        + ", "
        + cols
        + "], block"
        + b
        + ", kept "
        + kept.length
        + "/"
        + (blockRows() * blockCols())
        + ")";
  }
}
