package org.sparseflow.ops.packed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.matmul.BlockSparseKernels;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Packed N:M storage ({@link PackedNmLayout}, {@link PackedNmLinear}): forward, dx and dW of the
 * kept weights against a dense masked reference, in double (exact up to rounding) and in float
 * (Vector API path when present), for several n:m, ragged column and sample counts, non-contiguous
 * activations and 1 or 2 threads; layout and pack / unpack round trips; index-word validation.
 */
class PackedNmLinearTest {

  @AfterEach
  void restoreThreads() {
    BlockSparseKernels.setThreads(BlockSparseKernels.THREADS);
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        Arguments.of(2, 4, 1, 37, 33),
        Arguments.of(2, 4, 2, 200, 70),
        Arguments.of(1, 4, 1, 64, 65),
        Arguments.of(1, 4, 2, 131, 96),
        Arguments.of(2, 8, 1, 19, 40),
        Arguments.of(2, 8, 2, 150, 67),
        Arguments.of(3, 16, 2, 80, 35),
        Arguments.of(1, 2, 2, 90, 64));
  }

  @ParameterizedTest(name = "{0}:{1}, {2} thread(s), {3} samples, {4} columns")
  @MethodSource("cases")
  void matchesTheDenseMaskedReference(int n, int m, int threads, int ns, int cols) {
    BlockSparseKernels.setThreads(threads);
    int rows = 4 * m;
    NMMask mask = (NMMask) PatternSpec.nm(n, m).random(rows, cols, 1.0, 31L * ns + cols);
    PackedNmLayout l = PackedNmLayout.of(mask);
    Nd4j.getRandom().setSeed(ns);
    for (DataType t : new DataType[] {DataType.DOUBLE, DataType.FLOAT}) {
      INDArray w = Nd4j.randn(t, rows, cols).muli(mask.toDense(t));
      // non-contiguous activations: a column window of a wider array, and a transposed view
      INDArray xWide = Nd4j.randn(t, ns, rows + 5);
      INDArray x = xWide.get(NDArrayIndex.all(), NDArrayIndex.interval(2, 2 + rows));
      INDArray dy = Nd4j.randn(t, cols, ns).transpose();
      INDArray bias = Nd4j.randn(t, 1, cols);
      INDArray packed = PackedNmLinear.pack(w, l);
      assertArrayEquals(l.packedShape(), packed.shape());

      INDArray wd = w.castTo(DataType.DOUBLE);
      INDArray xd = x.castTo(DataType.DOUBLE);
      INDArray dyd = dy.castTo(DataType.DOUBLE);
      double tol = t == DataType.DOUBLE ? 1e-12 : 2e-4;
      INDArray y = PackedNmLinear.forward(x, packed, bias, l);
      assertEquals(t, y.dataType());
      assertClose(xd.mmul(wd).addiRowVector(bias.castTo(DataType.DOUBLE)), y, tol, "y " + t);

      INDArray dp = Nd4j.create(t, l.packedShape());
      INDArray dx = PackedNmLinear.backward(x, packed, l, dy, dp, true);
      assertClose(dyd.mmul(wd.transpose()), dx, tol, "dx " + t);
      INDArray dwRef = xd.transpose().mmul(dyd).muli(mask.toDense(DataType.DOUBLE));
      assertClose(PackedNmLinear.pack(dwRef, l), dp, tol, "dW " + t);
      assertTrue(PackedNmLinear.backward(x, packed, l, dy, dp, false) == null);
    }
  }

  @Test
  void packUnpackAndLayoutRoundTrips() {
    for (int[] nm : new int[][] {{2, 4}, {1, 4}, {2, 8}, {5, 32}}) {
      NMMask mask = (NMMask) PatternSpec.nm(nm[0], nm[1]).random(2 * nm[1], 13, 1.0, nm[1]);
      PackedNmLayout l = PackedNmLayout.of(mask);
      assertEquals(mask, l.toMask(), "layout -> mask " + l);
      PackedNmLayout again = PackedNmLayout.of(l.rows(), l.cols(), l.n(), l.m(), l.indexWords());
      assertEquals(l, again);
      Nd4j.getRandom().setSeed(nm[1]);
      INDArray w =
          Nd4j.randn(DataType.DOUBLE, l.rows(), l.cols()).muli(mask.toDense(DataType.DOUBLE));
      INDArray packed = PackedNmLinear.pack(w, l);
      assertEquals(w, PackedNmLinear.unpack(packed, l));
      assertEquals(w, PackedNmLinear.unpack(packed.reshape(packed.length()), l));
    }
  }

  @Test
  void indexBytesFor2to4AreTwoBitsPerKeptWeight() {
    NMMask mask = (NMMask) PatternSpec.nm(2, 4).random(512, 512, 1.0, 1);
    PackedNmLayout l = PackedNmLayout.of(mask);
    assertEquals(2, l.bitsPerIndex());
    assertEquals(256L * 512, l.packedLength());
    // 2 bits per kept weight = 1 bit per dense weight
    assertEquals(512L * 512 / 8, l.indexBytes());
    assertEquals(4, PackedNmLayout.bitsFor(8));
    assertEquals(8, PackedNmLayout.bitsFor(64));
  }

  @Test
  void rejectsBadIndexWords() {
    NMMask mask = (NMMask) PatternSpec.nm(2, 4).random(8, 16, 1.0, 2);
    int[] words = PackedNmLayout.of(mask).indexWords();
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> PackedNmLayout.of(8, 16, 2, 4, new int[words.length + 1]));
    assertTrue(e.getMessage().contains("indexWords has " + (words.length + 1)), e.getMessage());
    int[] repeated = new int[words.length]; // every offset 0: slot 1 repeats slot 0
    e =
        assertThrows(
            IllegalArgumentException.class, () -> PackedNmLayout.of(8, 16, 2, 4, repeated));
    assertTrue(e.getMessage().contains("strictly ascending"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> PackedNmLayout.of(6, 16, 2, 4, words));
    assertTrue(e.getMessage().contains("multiple of 4"), e.getMessage());
  }

  private static void assertClose(INDArray expected, INDArray actual, double tol, String what) {
    assertArrayEquals(expected.shape(), actual.shape(), what + " shape");
    double[] e = expected.castTo(DataType.DOUBLE).dup('c').data().asDouble();
    double[] a = actual.castTo(DataType.DOUBLE).dup('c').data().asDouble();
    for (int i = 0; i < e.length; i++) {
      assertEquals(e[i], a[i], tol * (1 + Math.abs(e[i])), what + " at " + i);
    }
  }
}
