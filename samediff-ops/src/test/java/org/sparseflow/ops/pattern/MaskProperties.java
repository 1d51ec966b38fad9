package org.sparseflow.ops.pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

/** Properties of mask construction: density, top-k, N:M groups, JSON round trips. */
class MaskProperties {

  private static final int[] BLOCKS = {8, 16, 32, 64};

  private static INDArray scores(int rows, int cols, long seed) {
    Nd4j.getRandom().setSeed(seed);
    return Nd4j.randn(DataType.DOUBLE, rows, cols);
  }

  @Property(tries = 60)
  void elementDensityWithinOneElement(
      @ForAll @IntRange(min = 1, max = 40) int rows,
      @ForAll @IntRange(min = 1, max = 40) int cols,
      @ForAll @DoubleRange(min = 0.01, max = 1.0) double density,
      @ForAll long seed) {
    SparseMask m = PatternSpec.unstructured().random(rows, cols, density, seed);
    long total = (long) rows * cols;
    assertTrue(
        Math.abs(m.density() - density) <= 1.0 / total + 1e-12 || m.nnz() == 1,
        m + " vs " + density);
    assertEquals(m.nnz(), countKept(m));
  }

  @Property(tries = 60)
  void blockDensityWithinOneBlock(
      @ForAll @IntRange(min = 0, max = 3) int bIdx,
      @ForAll @IntRange(min = 1, max = 6) int br,
      @ForAll @IntRange(min = 1, max = 6) int bc,
      @ForAll @DoubleRange(min = 0.01, max = 1.0) double density,
      @ForAll long seed) {
    int b = BLOCKS[bIdx];
    BlockMask m =
        (BlockMask) PatternSpec.block(b).random((long) br * b, (long) bc * b, density, seed);
    double oneBlock = 1.0 / (br * bc);
    assertTrue(
        Math.abs(m.density() - density) <= oneBlock + 1e-12 || m.keptBlockCount() == 1,
        m + " vs " + density);
    assertEquals(m.nnz(), countKept(m));
    // every block is all kept or all pruned
    for (int[] kb : m.keptBlocks()) {
      assertTrue(m.isKept((long) kb[0] * b + b - 1, (long) kb[1] * b));
    }
  }

  @Property(tries = 40)
  void elementTopKKeepsExactlyKLargest(
      @ForAll @IntRange(min = 1, max = 24) int rows,
      @ForAll @IntRange(min = 1, max = 24) int cols,
      @ForAll @DoubleRange(min = 0.01, max = 1.0) double density,
      @ForAll long seed) {
    INDArray s = scores(rows, cols, seed);
    SparseMask m = PatternSpec.unstructured().fromScores(s, density);
    long k = Math.max(1, Math.round(density * rows * cols));
    assertEquals(k, m.nnz());
    double minKept = Double.POSITIVE_INFINITY, maxPruned = Double.NEGATIVE_INFINITY;
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < cols; c++) {
        double v = s.getDouble(r, c);
        if (m.isKept(r, c)) {
          minKept = Math.min(minKept, v);
        } else {
          maxPruned = Math.max(maxPruned, v);
        }
      }
    }
    assertTrue(minKept >= maxPruned);
  }

  @Property(tries = 30)
  void blockTopKKeepsBlocksWithLargestNorm(
      @ForAll @IntRange(min = 0, max = 1) int bIdx,
      @ForAll @IntRange(min = 1, max = 4) int br,
      @ForAll @IntRange(min = 1, max = 4) int bc,
      @ForAll @DoubleRange(min = 0.01, max = 1.0) double density,
      @ForAll long seed) {
    int b = BLOCKS[bIdx];
    INDArray s = scores(br * b, bc * b, seed);
    BlockMask m = (BlockMask) PatternSpec.block(b).fromScores(s, density);
    assertEquals(Math.max(1, Math.round(density * br * bc)), m.keptBlockCount());
    double minKept = Double.POSITIVE_INFINITY, maxPruned = Double.NEGATIVE_INFINITY;
    for (int i = 0; i < br; i++) {
      for (int j = 0; j < bc; j++) {
        double norm =
            s.get(NDArrayIndex.interval(i * b, i * b + b), NDArrayIndex.interval(j * b, j * b + b))
                .norm2Number()
                .doubleValue();
        if (m.isBlockKept(i, j)) {
          minKept = Math.min(minKept, norm);
        } else {
          maxPruned = Math.max(maxPruned, norm);
        }
      }
    }
    assertTrue(minKept >= maxPruned - 1e-12);
  }

  @Property(tries = 40)
  void nmGroupsKeepExactlyN(
      @ForAll @IntRange(min = 1, max = 4) int n0,
      @ForAll @IntRange(min = 0, max = 2) int mIdx,
      @ForAll @IntRange(min = 1, max = 5) int groups,
      @ForAll @IntRange(min = 1, max = 12) int cols,
      @ForAll long seed,
      @ForAll boolean byScore) {
    int m = new int[] {4, 8, 16}[mIdx];
    int n = Math.min(n0, m);
    INDArray s = scores(groups * m, cols, seed);
    SparseMask mask =
        byScore
            ? PatternSpec.nm(n, m).fromScores(s, 0.5)
            : PatternSpec.nm(n, m).random(groups * m, cols, 0.5, seed);
    for (int g = 0; g < groups; g++) {
      for (int c = 0; c < cols; c++) {
        int kept = 0;
        double minKept = Double.POSITIVE_INFINITY, maxPruned = Double.NEGATIVE_INFINITY;
        for (int k = 0; k < m; k++) {
          double v = s.getDouble(g * m + k, c);
          if (mask.isKept(g * m + k, c)) {
            kept++;
            minKept = Math.min(minKept, v);
          } else {
            maxPruned = Math.max(maxPruned, v);
          }
        }
        assertEquals(n, kept);
        if (byScore) {
          assertTrue(minKept >= maxPruned);
        }
      }
    }
    assertEquals((double) n / m, mask.density(), 1e-12);
  }

  @Property(tries = 40)
  void jsonRoundTripIsIdentity(
      @ForAll @IntRange(min = 0, max = 2) int kind,
      @ForAll @IntRange(min = 1, max = 4) int a,
      @ForAll @IntRange(min = 1, max = 4) int bDim,
      @ForAll @DoubleRange(min = 0.01, max = 1.0) double density,
      @ForAll long seed) {
    PatternSpec spec =
        kind == 0
            ? PatternSpec.unstructured()
            : kind == 1 ? PatternSpec.block(8) : PatternSpec.nm(2, 4);
    long rows = kind == 0 ? a * 3L : a * 8L;
    long cols = kind == 0 ? bDim * 5L : bDim * 8L;
    SparseMask m = spec.random(rows, cols, density, seed);
    SparseMask back = SparseMask.fromJson(m.toJson());
    assertEquals(m, back);
    assertEquals(m.getClass(), back.getClass());
    assertEquals(m.spec(), back.spec());
    assertEquals(m.toDense(DataType.FLOAT), back.toDense(DataType.FLOAT));
    // dense round trip too
    assertEquals(m, spec.fromDense(m.toDense(DataType.DOUBLE)));
  }

  private static long countKept(SparseMask m) {
    return m.toDense(DataType.DOUBLE).sumNumber().longValue();
  }
}
