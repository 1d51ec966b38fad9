package org.sparseflow.ops.attention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Causal block-sparse attention layout: for each head, which (query block {@code I}, key block
 * {@code J}) tiles of size {@code blockSize x blockSize} are computed, plus a short list of exact
 * "extra" keys per query row. Immutable.
 *
 * <h2>What an attention pattern means on a block layout</h2>
 *
 * The kernel works on tiles, so every pattern component is mapped to one of two exact forms:
 *
 * <ol>
 *   <li><b>Block cover (rounded up to blocks)</b> for the "contiguous" components DENSE, LOCAL, the
 *       own-segment part of FIXED, and the whole-block part of GLOBAL: a tile {@code (I, J)} is
 *       kept when at least one element {@code (i, j)} of the tile is allowed by the element rule.
 *       Inside a kept tile every causal pair ({@code j <= i}) is computed, so this is a
 *       <i>block-level approximation</i> that is a superset of the element pattern: e.g. {@code
 *       local:128} with block size 64 keeps tiles {@code I-2..I}, i.e. query {@code i} sees between
 *       128 and 192 keys (itself included). In general query block {@code I} keeps {@code min(I+1,
 *       1 + ceil((W-1)/b))} tiles for {@code local:W}: each row sees at least the requested window
 *       and at most {@code W + 2(b-1)} keys, i.e. the density is the requested one rounded out to
 *       whole tiles.
 *   <li><b>Exact element extras</b> for the "scattered" components STRIDED, the summary columns of
 *       FIXED and a partial block of GLOBAL columns: these would make whole tile columns dense if
 *       rounded up to blocks (a stride of 128 with block 64 touches every second tile), so the
 *       allowed keys that are not already in a kept tile are listed per query row and computed with
 *       per-row dot products.
 * </ol>
 *
 * RANDOM is defined on tiles only: query block {@code I} gets {@code min(R, I)} distinct earlier
 * key blocks, drawn independently per head (BigBird). The diagonal tile {@code (I, I)} is always
 * kept, so every query row attends at least to itself. Causality: only tiles with {@code J <= I}
 * exist and inside the diagonal tile {@code j > i} is masked; extras always satisfy {@code j < i}.
 *
 * <p>The effective element mask, i.e. exactly what the kernel computes, is {@link #isKept(int, int,
 * int)}.
 */
public final class BlockLayout {

  private final int seqLen;
  private final int blockSize;
  private final int numHeads;

  /** [head][I][J] (J <= I). Heads may share arrays. */
  private final boolean[][][] blocks;

  /** [head][I] sorted kept key blocks. */
  private final int[][][] keyBlocks;

  /** [head][i] sorted extra keys (not inside a kept tile); empty arrays when none. */
  private final int[][][] extras;

  /** Strides of STRIDED components; their extra keys are computed apart from the tiles. */
  private final int[] strides;

  /** [head][i] extra keys not of the form i - m*stride (computed with per-row dot products). */
  private final int[][][] otherExtras;

  private final String description;

  /** [head * strides + si]: {@link #strideExtraBits}, built on first use. */
  private final AtomicReferenceArray<long[]> strideBits;

  BlockLayout(
      int seqLen,
      int blockSize,
      boolean[][][] blocks,
      int[][][] extras,
      int[] strides,
      String description) {
    this.seqLen = seqLen;
    this.blockSize = blockSize;
    this.numHeads = blocks.length;
    this.blocks = blocks;
    this.extras = extras;
    this.strides = strides;
    this.description = description;
    this.strideBits = new AtomicReferenceArray<>(numHeads * strides.length);
    this.otherExtras = new int[numHeads][][];
    for (int h = 0; h < numHeads; h++) {
      if (h > 0 && extras[h] == extras[h - 1]) {
        otherExtras[h] = otherExtras[h - 1];
        continue;
      }
      otherExtras[h] = new int[seqLen][];
      for (int i = 0; i < seqLen; i++) {
        final int row = i;
        otherExtras[h][i] =
            strides.length == 0
                ? extras[h][i]
                : Arrays.stream(extras[h][i]).filter(j -> !onStride(row, j)).toArray();
      }
    }
    this.keyBlocks = new int[numHeads][][];
    for (int h = 0; h < numHeads; h++) {
      if (h > 0 && blocks[h] == blocks[h - 1]) {
        keyBlocks[h] = keyBlocks[h - 1];
        continue;
      }
      int nb = blocks[h].length;
      keyBlocks[h] = new int[nb][];
      for (int i = 0; i < nb; i++) {
        int c = 0;
        for (int j = 0; j <= i; j++) {
          if (blocks[h][i][j]) {
            c++;
          }
        }
        int[] list = new int[c];
        c = 0;
        for (int j = 0; j <= i; j++) {
          if (blocks[h][i][j]) {
            list[c++] = j;
          }
        }
        keyBlocks[h][i] = list;
      }
    }
  }

  /**
   * Builds the layout of {@code pattern} for sequences of length {@code seqLen} (a multiple of
   * {@code blockSize}). Heads differ only when the pattern has a RANDOM component.
   *
   * @throws IllegalArgumentException on a non-positive size or when seqLen is not a multiple of
   *     blockSize
   */
  public static BlockLayout of(AttentionPattern pattern, int seqLen, int blockSize, int numHeads) {
    return BlockLayoutFactory.of(pattern, seqLen, blockSize, numHeads);
  }

  /** Dense causal layout (every tile J <= I). */
  public static BlockLayout dense(int seqLen, int blockSize, int numHeads) {
    return of(AttentionPattern.dense(), seqLen, blockSize, numHeads);
  }

  /**
   * Layout from explicit per-head tile grids {@code [head][I][J]}, each {@code nb x nb} with {@code
   * nb = seqLen / blockSize}. Tiles above the diagonal are rejected; the diagonal is added.
   */
  public static BlockLayout fromBlocks(boolean[][][] grids, int seqLen, int blockSize) {
    return BlockLayoutFactory.fromBlocks(grids, seqLen, blockSize);
  }

  public int seqLen() {
    return seqLen;
  }

  public int blockSize() {
    return blockSize;
  }

  public int numHeads() {
    return numHeads;
  }

  public int numBlocks() {
    return seqLen / blockSize;
  }

  /** The pattern string this layout was built from, or "custom". */
  public String description() {
    return description;
  }

  /** Maps an attention head to the layout head (a 1-head layout is shared by all heads). */
  int layoutHead(int head) {
    return numHeads == 1 ? 0 : head;
  }

  private void checkHead(int head) {
    if (head < 0 || head >= numHeads) {
      throw new IllegalArgumentException("head=" + head + " must be in [0, " + numHeads + ")");
    }
  }

  public boolean isBlockKept(int head, int qBlock, int kBlock) {
    checkHead(head);
    int nb = numBlocks();
    if (qBlock < 0 || qBlock >= nb || kBlock < 0 || kBlock >= nb) {
      throw new IllegalArgumentException(
          "block (" + qBlock + "," + kBlock + ") outside [0," + nb + ")");
    }
    return blocks[head][qBlock][kBlock];
  }

  /** Sorted kept key blocks of query block {@code qBlock} (a copy). */
  public int[] keyBlocks(int head, int qBlock) {
    checkHead(head);
    return keyBlocks[head][qBlock].clone();
  }

  int[] keyBlocksNoCopy(int head, int qBlock) {
    return keyBlocks[head][qBlock];
  }

  /** Kept tiles of a head as {@code {I, J}} pairs, row-major. */
  public int[][] keptBlocks(int head) {
    checkHead(head);
    List<int[]> out = new ArrayList<>();
    for (int i = 0; i < numBlocks(); i++) {
      for (int j : keyBlocks[head][i]) {
        out.add(new int[] {i, j});
      }
    }
    return out.toArray(new int[0][]);
  }

  public int keptBlockCount(int head) {
    checkHead(head);
    int c = 0;
    for (int[] r : keyBlocks[head]) {
      c += r.length;
    }
    return c;
  }

  /**
   * Sorted extra keys of query row {@code i} (keys computed element-wise outside kept tiles); a
   * copy.
   */
  public int[] extraKeys(int head, int i) {
    checkHead(head);
    return extras[head][i].clone();
  }

  /** Extra keys of row i that are not on a stride (see {@link #strides()}). */
  int[] otherExtrasNoCopy(int head, int i) {
    return otherExtras[head][i];
  }

  /** Distinct strides of the STRIDED components (package use: the kernel's residue-class path). */
  int[] strides() {
    return strides;
  }

  /** True when (i - j) is a positive multiple of one of the strides. */
  boolean onStride(int i, int j) {
    for (int st : strides) {
      if (j < i && (i - j) % st == 0) {
        return true;
      }
    }
    return false;
  }

  /**
   * True when the pair (i, j) is an extra key produced by stride {@code strides()[si]} and by no
   * earlier stride in the list (so that each pair is computed exactly once).
   */
  boolean isStrideExtra(int head, int si, int i, int j) {
    if (j >= i || blocks[head][i / blockSize][j / blockSize]) {
      return false;
    }
    if ((i - j) % strides[si] != 0) {
      return false;
    }
    for (int e = 0; e < si; e++) {
      if ((i - j) % strides[e] == 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@link #isStrideExtra} for every pair of stride {@code strides()[si]} as bits, for kernels that
   * visit the pairs many times: bit c of row i, at word {@code i * words + c / 64} with {@code
   * words = ceil(n / 64)} and n the longest residue class, is set when key {@code i % s + c s} is
   * such an extra of query i. Built once per (layout head, stride) on first use; callers must not
   * modify it.
   */
  long[] strideExtraBits(int head, int si) {
    int slot = head * strides.length + si;
    long[] bits = strideBits.get(slot);
    if (bits == null) {
      int st = strides[si];
      int words = strideExtraWords(si);
      bits = new long[seqLen * words];
      for (int i = 0; i < seqLen; i++) {
        for (int c = 0; c < i / st; c++) {
          if (isStrideExtra(head, si, i, i % st + c * st)) {
            bits[i * words + (c >>> 6)] |= 1L << c;
          }
        }
      }
      strideBits.compareAndSet(slot, null, bits); // a racing thread built the same bits
    }
    return bits;
  }

  /** Words per row of {@link #strideExtraBits}. */
  int strideExtraWords(int si) {
    int n = (seqLen - 1) / strides[si] + 1;
    return (n + 63) >>> 6;
  }

  /** True when some row of some head has extra keys that are not on a stride. */
  boolean hasOtherExtras() {
    for (int[][] e : otherExtras) {
      for (int[] r : e) {
        if (r.length > 0) {
          return true;
        }
      }
    }
    return false;
  }

  /** True if some row of some head has extra keys. */
  public boolean hasExtras() {
    for (int[][] e : extras) {
      for (int[] r : e) {
        if (r.length > 0) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The effective element mask: true when the kernel computes the score of key {@code j} for query
   * {@code i}.
   */
  public boolean isKept(int head, int i, int j) {
    checkHead(head);
    if (i < 0 || i >= seqLen || j < 0 || j >= seqLen) {
      throw new IllegalArgumentException(
          "position (" + i + "," + j + ") outside [0," + seqLen + ")");
    }
    if (j > i) {
      return false;
    }
    if (blocks[head][i / blockSize][j / blockSize]) {
      return true;
    }
    return Arrays.binarySearch(extras[head][i], j) >= 0;
  }

  /** Effective element mask of one head as {@code [T][T]}. */
  public boolean[][] elementMask(int head) {
    checkHead(head);
    boolean[][] m = new boolean[seqLen][seqLen];
    for (int i = 0; i < seqLen; i++) {
      for (int jb : keyBlocks[head][i / blockSize]) {
        int end = Math.min((jb + 1) * blockSize, i + 1);
        for (int j = jb * blockSize; j < end; j++) {
          m[i][j] = true;
        }
      }
      for (int j : extras[head][i]) {
        m[i][j] = true;
      }
    }
    return m;
  }

  /** Number of (i, j) pairs computed for one head. */
  public long keptElements(int head) {
    checkHead(head);
    long c = 0;
    for (int i = 0; i < seqLen; i++) {
      int ib = i / blockSize;
      for (int jb : keyBlocks[head][ib]) {
        c += jb == ib ? (i % blockSize) + 1 : blockSize;
      }
      c += extras[head][i].length;
    }
    return c;
  }

  /** Computed pairs relative to dense causal attention ({@code T(T+1)/2}), averaged over heads. */
  public double density() {
    double s = 0;
    for (int h = 0; h < numHeads; h++) {
      s += density(h);
    }
    return s / numHeads;
  }

  public double density(int head) {
    return keptElements(head) / (seqLen * (seqLen + 1) / 2.0);
  }

  /** Kept tiles relative to the {@code nb(nb+1)/2} causal tiles, averaged over heads. */
  public double blockDensity() {
    int nb = numBlocks();
    double s = 0;
    for (int h = 0; h < numHeads; h++) {
      s += keptBlockCount(h);
    }
    return s / numHeads / (nb * (nb + 1) / 2.0);
  }

  @Override
  public String toString() {
    return "BlockLayout{pattern="
        + description
        + ", seqLen="
        + seqLen
        + ", blockSize="
        + blockSize
        + ", heads="
        + numHeads
        + ", density="
        + String.format("%.4f", density())
        + "}";
  }
}
