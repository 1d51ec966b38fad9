package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.NDArrayIndex;

/** Properties of layouts built from random patterns and geometries. */
class BlockLayoutProperties {

  @Provide
  Arbitrary<AttentionPattern> patterns() {
    Arbitrary<AttentionPattern.Component> comp =
        Arbitraries.oneOf(
            Arbitraries.just(AttentionPattern.Component.dense()),
            Arbitraries.integers().between(1, 40).map(AttentionPattern.Component::local),
            Arbitraries.integers().between(1, 40).map(AttentionPattern.Component::strided),
            Combinators.combine(
                    Arbitraries.integers().between(1, 24), Arbitraries.integers().between(1, 24))
                .as((l, c) -> AttentionPattern.Component.fixed(l, Math.min(l, c))),
            Arbitraries.integers().between(1, 40).map(AttentionPattern.Component::global),
            Combinators.combine(Arbitraries.integers().between(1, 4), Arbitraries.longs())
                .as(AttentionPattern.Component::random));
    return comp.list().ofMinSize(1).ofMaxSize(3).map(AttentionPattern::new);
  }

  @Property(tries = 60)
  void strideExtraBitsAreIsStrideExtraForEveryPair(
      @ForAll("patterns") AttentionPattern pattern,
      @ForAll @IntRange(min = 1, max = 16) int blockSize,
      @ForAll @IntRange(min = 1, max = 8) int numBlocks,
      @ForAll @IntRange(min = 1, max = 3) int heads) {
    int t = blockSize * numBlocks;
    BlockLayout layout = pattern.layout(t, blockSize, heads);
    int[] strides = layout.strides();
    for (int h = 0; h < heads; h++) {
      int head = layout.layoutHead(h);
      for (int si = 0; si < strides.length; si++) {
        int st = strides[si];
        long[] bits = layout.strideExtraBits(head, si);
        int words = layout.strideExtraWords(si);
        assertEquals(t * words, bits.length);
        for (int i = 0; i < t; i++) {
          for (int c = 0; c < words * 64; c++) {
            int j = i % st + c * st;
            boolean bit = (bits[i * words + (c >>> 6)] >>> c & 1L) != 0;
            assertEquals(
                j < t && layout.isStrideExtra(head, si, i, j),
                bit,
                "stride " + st + " query " + i + " key " + j);
          }
        }
        assertSame(bits, layout.strideExtraBits(head, si), "built once, then cached");
      }
    }
  }

  @Property(tries = 60)
  void causalEveryRowSeesItselfAndCoversThePattern(
      @ForAll("patterns") AttentionPattern pattern,
      @ForAll @IntRange(min = 1, max = 16) int blockSize,
      @ForAll @IntRange(min = 1, max = 8) int numBlocks,
      @ForAll @IntRange(min = 1, max = 3) int heads) {
    int t = blockSize * numBlocks;
    BlockLayout layout = pattern.layout(t, blockSize, heads);
    assertEquals(pattern, AttentionPattern.parse(pattern.toString()));
    for (int h = 0; h < heads; h++) {
      for (int[] ij : layout.keptBlocks(h)) {
        assertTrue(ij[1] <= ij[0], "tile above the diagonal " + ij[0] + "," + ij[1]);
      }
      boolean[][] m = layout.elementMask(h);
      long kept = 0;
      for (int i = 0; i < t; i++) {
        assertTrue(m[i][i], "row " + i + " does not see itself");
        for (int j = 0; j < t; j++) {
          if (j > i) {
            assertFalse(m[i][j] || layout.isKept(h, i, j), "future key " + j + " for query " + i);
          } else {
            assertEquals(m[i][j], layout.isKept(h, i, j));
            if (pattern.allows(i, j)) {
              assertTrue(m[i][j], pattern + ": allowed pair (" + i + "," + j + ") not computed");
            }
          }
          kept += m[i][j] ? 1 : 0;
        }
      }
      assertEquals(kept, layout.keptElements(h));
    }
    assertTrue(layout.density() >= pattern.elementDensity(t) - 1e-12);
    assertTrue(layout.density() <= 1.0 + 1e-12);
  }

  /**
   * Density as requested within one block: query block I keeps exactly min(I+1, 1 + ceil((W-1)/b))
   * tiles (its own plus the W-1 previous keys rounded out to whole tiles), so each row sees at
   * least the requested window and at most W + 2(b-1) keys.
   */
  @Property(tries = 40)
  void localWindowIsWithinOneBlockOfTheRequest(
      @ForAll @IntRange(min = 1, max = 64) int window,
      @ForAll @IntRange(min = 1, max = 16) int blockSize,
      @ForAll @IntRange(min = 1, max = 10) int numBlocks) {
    int t = blockSize * numBlocks;
    BlockLayout layout = AttentionPattern.parse("local:" + window).layout(t, blockSize, 1);
    int tilesPerRow = 1 + (window - 1 + blockSize - 1) / blockSize;
    for (int qb = 0; qb < numBlocks; qb++) {
      assertEquals(
          Math.min(qb + 1, tilesPerRow), layout.keyBlocks(0, qb).length, "query block " + qb);
    }
    long kept = 0;
    for (int i = 0; i < t; i++) {
      int seen = 0;
      for (int j = 0; j <= i; j++) {
        seen += layout.isKept(0, i, j) ? 1 : 0;
      }
      assertTrue(
          seen >= Math.min(i + 1, window), "row " + i + " sees " + seen + " < window " + window);
      assertTrue(
          seen <= Math.min(i + 1, window + 2 * (blockSize - 1)), "row " + i + " sees " + seen);
      kept += seen;
    }
    assertEquals(kept, layout.keptElements(0));
  }

  @Property(tries = 12)
  void perturbingFutureTokensNeverChangesEarlierOutputs(
      @ForAll("patterns") AttentionPattern pattern,
      @ForAll @IntRange(min = 1, max = 6) int blockSize,
      @ForAll @IntRange(min = 2, max = 5) int numBlocks,
      @ForAll @IntRange(min = 1, max = 100) int cutPercent) {
    int t = blockSize * numBlocks;
    int cut = Math.max(1, Math.min(t - 1, t * cutPercent / 100));
    BlockLayout layout = pattern.layout(t, blockSize, 2);
    INDArray q = AttentionTestUtil.rand(cutPercent, DataType.DOUBLE, 1, 2, t, 3);
    INDArray k = AttentionTestUtil.rand(cutPercent + 1, DataType.DOUBLE, 1, 2, t, 3);
    INDArray v = AttentionTestUtil.rand(cutPercent + 2, DataType.DOUBLE, 1, 2, t, 3);
    INDArray before = SparseAttention.forward(q, k, v, layout, 0.6).out();
    List<INDArray> inputs = new ArrayList<>(List.of(q, k, v));
    for (INDArray a : inputs) {
      a.get(
              NDArrayIndex.all(),
              NDArrayIndex.all(),
              NDArrayIndex.interval(cut, t),
              NDArrayIndex.all())
          .muli(-3.0)
          .addi(1.5);
    }
    INDArray after = SparseAttention.forward(q, k, v, layout, 0.6).out();
    INDArray pastBefore =
        before.get(
            NDArrayIndex.all(),
            NDArrayIndex.all(),
            NDArrayIndex.interval(0, cut),
            NDArrayIndex.all());
    INDArray pastAfter =
        after.get(
            NDArrayIndex.all(),
            NDArrayIndex.all(),
            NDArrayIndex.interval(0, cut),
            NDArrayIndex.all());
    assertEquals(
        0.0, pastBefore.sub(pastAfter).amaxNumber().doubleValue(), 0.0, pattern + " cut=" + cut);
  }

  /** The kernel equals a plain dense softmax attention masked with the layout's element mask. */
  @Property(tries = 15)
  void kernelEqualsDenseMaskedReference(
      @ForAll("patterns") AttentionPattern pattern,
      @ForAll @IntRange(min = 1, max = 6) int blockSize,
      @ForAll @IntRange(min = 1, max = 5) int numBlocks,
      @ForAll @IntRange(min = 1, max = 5) int headDim,
      @ForAll @IntRange(min = 0, max = 1000) int seed) {
    int t = blockSize * numBlocks;
    BlockLayout layout = pattern.layout(t, blockSize, 2);
    INDArray q = AttentionTestUtil.rand(seed, DataType.DOUBLE, 2, 2, t, headDim);
    INDArray k = AttentionTestUtil.rand(seed + 1, DataType.DOUBLE, 2, 2, t, headDim);
    INDArray v = AttentionTestUtil.rand(seed + 2, DataType.DOUBLE, 2, 2, t, headDim);
    INDArray out = SparseAttention.forward(q, k, v, layout, 0.7).out();
    INDArray ref =
        AttentionTestUtil.toArray(
            AttentionTestUtil.reference(q, k, v, AttentionTestUtil.masksOf(layout), 0.7));
    assertTrue(AttentionTestUtil.relErr(out, ref) < 1e-9, pattern + " T=" + t + " b=" + blockSize);
  }
}
