package org.sparseflow.ops.pattern;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * Block mask: W [rows, cols] is tiled into b x b blocks; each block is kept or pruned as a whole.
 * Block (i, j) covers rows [i*b, (i+1)*b) and columns [j*b, (j+1)*b).
 */
public class BlockMask extends SparseMask {

  private final int blockSize;
  private final int blockRows;
  private final int blockCols;

  /** Row-major block flags, index i * blockCols + j. */
  private final boolean[] blocks;

  private final int keptCount;

  private BlockMask(long rows, long cols, int blockSize, boolean[] blocks) {
    super(rows, cols);
    checkArgs(rows, cols, blockSize);
    this.blockSize = blockSize;
    this.blockRows = (int) (rows / blockSize);
    this.blockCols = (int) (cols / blockSize);
    if (blocks.length != blockRows * blockCols) {
      throw new IllegalArgumentException(
          "blocks has " + blocks.length + " entries; expected " + blockRows * blockCols);
    }
    this.blocks = blocks;
    int k = 0;
    for (boolean f : blocks) {
      if (f) {
        k++;
      }
    }
    this.keptCount = k;
  }

  private static void checkArgs(long rows, long cols, int blockSize) {
    MaskPattern.check(MaskPattern.Kind.BLOCK, blockSize, 0, 0);
    MaskBuilders.checkDims(rows, cols);
    MaskBuilders.checkDivides("rows", rows, blockSize);
    MaskBuilders.checkDivides("cols", cols, blockSize);
  }

  /** Builds a mask from row-major block flags [rows/b * cols/b] (copied). */
  public static BlockMask of(long rows, long cols, int blockSize, boolean[] rowMajorBlockFlags) {
    return new BlockMask(rows, cols, blockSize, rowMajorBlockFlags.clone());
  }

  static BlockMask random(long rows, long cols, int blockSize, double density, long seed) {
    checkArgs(rows, cols, blockSize);
    int nb = (int) ((rows / blockSize) * (cols / blockSize));
    return new BlockMask(
        rows,
        cols,
        blockSize,
        MaskBuilders.randomK(nb, MaskBuilders.keptCount(density, nb), new SplittableRandom(seed)));
  }

  static BlockMask fromScores(INDArray scores, int blockSize, double density) {
    long rows = scores.size(0);
    long cols = scores.size(1);
    checkArgs(rows, cols, blockSize);
    double[] s = MaskBuilders.readRowMajor("scores", scores);
    int br = (int) (rows / blockSize);
    int bc = (int) (cols / blockSize);
    double[] norms = new double[br * bc];
    for (int r = 0; r < rows; r++) {
      int rowBase = (int) (r * cols);
      int bi = r / blockSize;
      for (int c = 0; c < cols; c++) {
        double v = s[rowBase + c];
        norms[bi * bc + c / blockSize] += v * v;
      }
    }
    // sqrt is monotone, so ranking by squared norm equals ranking by L2 norm
    return new BlockMask(
        rows,
        cols,
        blockSize,
        MaskBuilders.topK(norms, MaskBuilders.keptCount(density, norms.length)));
  }

  /** Reads a dense 0/1 mask; every block must be all-kept or all-pruned. */
  static BlockMask fromDense(INDArray mask01, int blockSize) {
    long rows = mask01.size(0);
    long cols = mask01.size(1);
    checkArgs(rows, cols, blockSize);
    int br = (int) (rows / blockSize);
    int bc = (int) (cols / blockSize);
    // native reductions over each block: max and min. A 'c'-ordered floating 0/1 mask is reduced in
    // place
    // (a free reshape); anything else is first turned into a 0/1 indicator.
    boolean direct = mask01.dataType().isFPType() && mask01.ordering() == 'c' && !mask01.isView();
    float[][] mm = blockMaxMin(direct ? mask01 : indicator(mask01), br, bc, blockSize);
    if (direct && !zeroOne(mm)) {
      mm = blockMaxMin(indicator(mask01), br, bc, blockSize);
    }
    float[] max = mm[0];
    float[] min = mm[1];
    boolean[] flags = new boolean[br * bc];
    for (int i = 0; i < flags.length; i++) {
      if (max[i] != min[i]) {
        throw new IllegalArgumentException(
            "mask block ("
                + i / bc
                + ", "
                + i % bc
                + ") is partially kept; a block"
                + blockSize
                + " mask must keep or prune whole "
                + blockSize
                + "x"
                + blockSize
                + " blocks");
      }
      flags[i] = max[i] != 0f;
    }
    return new BlockMask(rows, cols, blockSize, flags);
  }

  private static INDArray indicator(INDArray mask) {
    return mask.neq(0.0).castTo(DataType.FLOAT).dup('c');
  }

  private static float[][] blockMaxMin(INDArray m, int br, int bc, int blockSize) {
    INDArray r = m.reshape('c', br, blockSize, bc, blockSize);
    return new float[][] {
      r.max(1, 3).castTo(DataType.FLOAT).dup('c').data().asFloat(),
      r.min(1, 3).castTo(DataType.FLOAT).dup('c').data().asFloat()
    };
  }

  private static boolean zeroOne(float[][] mm) {
    for (float[] a : mm) {
      for (float v : a) {
        if (v != 0f && v != 1f) {
          return false;
        }
      }
    }
    return true;
  }

  static BlockMask fromJsonFields(long rows, long cols, int blockSize, String bits) {
    checkArgs(rows, cols, blockSize);
    int nb = (int) ((rows / blockSize) * (cols / blockSize));
    return new BlockMask(
        rows, cols, blockSize, ElementMask.unpack(MaskBuilders.fromBase64(bits, nb), nb));
  }

  public int blockSize() {
    return blockSize;
  }

  public int blockRows() {
    return blockRows;
  }

  public int blockCols() {
    return blockCols;
  }

  /** Number of kept blocks. */
  public int keptBlockCount() {
    return keptCount;
  }

  /** Whether block (i, j) is kept. */
  public boolean isBlockKept(int i, int j) {
    if (i < 0 || i >= blockRows || j < 0 || j >= blockCols) {
      throw new IllegalArgumentException(
          "block (i, j) = ("
              + i
              + ", "
              + j
              + ") is outside [0, "
              + blockRows
              + ") x [0, "
              + blockCols
              + ")");
    }
    return blocks[i * blockCols + j];
  }

  /** Kept blocks as {blockRow, blockCol} pairs, in row-major order. */
  public int[][] keptBlocks() {
    int[][] out = new int[keptCount][];
    int k = 0;
    for (int i = 0; i < blocks.length; i++) {
      if (blocks[i]) {
        out[k++] = new int[] {i / blockCols, i % blockCols};
      }
    }
    return out;
  }

  /** Block flags [blockRows * blockCols], row-major (copy). */
  public boolean[] blockFlags() {
    return blocks.clone();
  }

  @Override
  public long nnz() {
    return (long) keptCount * blockSize * blockSize;
  }

  @Override
  public PatternSpec spec() {
    return PatternSpec.block(blockSize);
  }

  @Override
  public boolean isKept(long r, long c) {
    if (r < 0 || r >= rows || c < 0 || c >= cols) {
      throw new IllegalArgumentException(
          "(r, c) = (" + r + ", " + c + ") is outside [0, " + rows + ") x [0, " + cols + ")");
    }
    return blocks[(int) (r / blockSize) * blockCols + (int) (c / blockSize)];
  }

  @Override
  protected boolean[] keptFlags() {
    boolean[] flags = new boolean[(int) (rows * cols)];
    for (int r = 0; r < rows; r++) {
      int bi = r / blockSize;
      for (int j = 0; j < blockCols; j++) {
        if (blocks[bi * blockCols + j]) {
          int start = (int) (r * cols) + j * blockSize;
          Arrays.fill(flags, start, start + blockSize, true);
        }
      }
    }
    return flags;
  }

  @Override
  public INDArray toDense(DataType dataType) {
    // expand the block grid natively: [br, 1, bc, 1] broadcast to [br, b, bc, b]
    float[] f = new float[blocks.length];
    for (int i = 0; i < f.length; i++) {
      f[i] = blocks[i] ? 1f : 0f;
    }
    INDArray grid = Nd4j.create(f, new long[] {blockRows, 1, blockCols, 1}, DataType.FLOAT);
    INDArray full =
        grid.broadcast(blockRows, blockSize, blockCols, blockSize)
            .dup('c')
            .reshape('c', rows, cols);
    return full.castTo(dataType);
  }

  @Override
  protected void writeJsonFields(ObjectNode node) {
    node.put("bits", MaskBuilders.toBase64(MaskBuilders.pack(blocks), blocks.length));
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof BlockMask)) {
      return false;
    }
    BlockMask b = (BlockMask) o;
    return rows == b.rows
        && cols == b.cols
        && blockSize == b.blockSize
        && Arrays.equals(blocks, b.blocks);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(blocks) * 31 + blockSize;
  }
}
