package org.sparseflow.ops.matmul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The JDK Vector API block kernels (fp32) against a dense masked reference computed in double from
 * the same inputs: each block size, token counts that are not a multiple of the tile or of the
 * micro-kernel's rows (ragged edges), row-major, column-major and offset strided views for every
 * operand, 1 and 2 threads, and NaN reporting through {@link SparseLinear}. The tests run with
 * {@code --add-modules jdk.incubator.vector} (see the parent pom), so the kernels must be there.
 */
class VectorBlockKernelsTest {

  private static final double TOL = 2e-6;

  @AfterEach
  void restoreThreads() {
    BlockSparseKernels.setThreads(BlockSparseKernels.THREADS);
  }

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    int[] blocks = {16, 32, 64};
    int[] tokens = {1, 37, 130};
    String[] layouts = {"c", "f", "view"};
    int i = 0;
    for (int b : blocks) {
      for (int t : tokens) {
        for (int threads = 1; threads <= 2; threads++) {
          out.add(Arguments.of(b, t, layouts[i++ % layouts.length], threads));
        }
      }
    }
    return out.stream();
  }

  /** An fp32 [rows x cols] matrix with the given layout holding a's values. */
  private static INDArray layout(INDArray a, String kind) {
    switch (kind) {
      case "c":
        return a.dup('c');
      case "f":
        return a.dup('f');
      default:
        // an offset view into a wider, taller array (row stride != cols)
        INDArray big = Nd4j.rand(DataType.FLOAT, a.rows() + 3, a.columns() + 5).muli(1e3);
        INDArray v =
            big.get(
                NDArrayIndex.interval(2, 2 + a.rows()), NDArrayIndex.interval(3, 3 + a.columns()));
        v.assign(a);
        return v;
    }
  }

  private static double relErr(INDArray a, INDArray ref) {
    INDArray d = a.castTo(DataType.DOUBLE);
    double diff = d.sub(ref).norm2Number().doubleValue();
    return diff / Math.max(1e-12, ref.norm2Number().doubleValue());
  }

  @ParameterizedTest(name = "b={0} T={1} layout={2} threads={3}")
  @MethodSource("cases")
  void forwardAndBackwardMatchDoubleReference(int b, int t, String kind, int threads) {
    assertTrue(VectorSupport.AVAILABLE, "tests run with --add-modules jdk.incubator.vector");
    BlockSparseKernels.setThreads(threads);
    int nIn = 2 * b + (b == 64 ? 0 : b);
    int nOut = 3 * b;
    BlockMask mask = (BlockMask) PatternSpec.block(b).random(nIn, nOut, 0.4, 11L * b + t);
    Nd4j.getRandom().setSeed(b * 100L + t);
    INDArray x0 = Nd4j.randn(DataType.FLOAT, t, nIn);
    INDArray w0 = Nd4j.randn(DataType.FLOAT, nIn, nOut);
    INDArray dy0 = Nd4j.randn(DataType.FLOAT, t, nOut);
    INDArray m = mask.toDense(DataType.DOUBLE);
    INDArray xd = x0.castTo(DataType.DOUBLE);
    INDArray wd = w0.castTo(DataType.DOUBLE).mul(m);
    INDArray dyd = dy0.castTo(DataType.DOUBLE);

    INDArray x = layout(x0, kind);
    INDArray w = layout(w0, kind);
    INDArray dy = layout(dy0, kind);
    assertTrue(VectorSupport.applies(mask, x, w, dy));

    INDArray y = layout(Nd4j.valueArrayOf(new long[] {t, nOut}, Float.NaN, DataType.FLOAT), kind);
    assertTrue(!VectorBlockKernels.forward(x, w, mask, y), "no NaN reported");
    assertTrue(relErr(y, xd.mmul(wd)) < TOL, "forward " + relErr(y, xd.mmul(wd)));

    INDArray dx = layout(Nd4j.valueArrayOf(new long[] {t, nIn}, Float.NaN, DataType.FLOAT), kind);
    INDArray dW = layout(Nd4j.zeros(DataType.FLOAT, nIn, nOut), kind);
    INDArray db = Nd4j.valueArrayOf(new long[] {nOut}, Float.NaN, DataType.FLOAT);
    VectorBlockKernels.Gradients g = VectorBlockKernels.backward(x, w, mask, dy, dx, dW, db);
    assertTrue(!g.inputNaN() && !g.activationNaN(), "no NaN reported");
    assertTrue(relErr(dx, dyd.mmul(wd.transpose())) < TOL, "dx");
    assertTrue(relErr(dW, xd.transpose().mmul(dyd).mul(m)) < TOL, "dW on kept blocks, 0 elsewhere");
    assertTrue(relErr(db, dyd.sum(0)) < TOL, "dBias");
  }

  /**
   * dW and dBias are sums over row tiles; they must be bit-identical whatever the thread count and
   * however the threads pick up the tiles, or resumed training would drift from an uninterrupted
   * run. Many tiles (1000 rows) so that two threads share the work in every repetition.
   */
  @Test
  void backwardSumsAreBitIdenticalForAnyThreadCount() {
    BlockMask mask = (BlockMask) PatternSpec.block(16).random(64, 96, 0.5, 5);
    Nd4j.getRandom().setSeed(17);
    INDArray x = Nd4j.randn(DataType.FLOAT, 1000, 64);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 96);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 1000, 96);
    INDArray refW = null;
    INDArray refB = null;
    for (int rep = 0; rep < 6; rep++) {
      BlockSparseKernels.setThreads(rep % 3 == 0 ? 1 : 2);
      INDArray dW = Nd4j.zeros(DataType.FLOAT, 64, 96);
      INDArray db = Nd4j.zeros(DataType.FLOAT, 96);
      VectorBlockKernels.backward(x, w, mask, dy, null, dW, db);
      if (refW == null) {
        refW = dW;
        refB = db;
      } else {
        assertEquals(refW, dW, "dW, repetition " + rep);
        assertEquals(refB, db, "dBias, repetition " + rep);
      }
    }
  }

  @Test
  void rowMajorWeightGradientOverwritesGarbageOutsideTheMask() {
    BlockMask mask = (BlockMask) PatternSpec.block(32).random(64, 96, 0.3, 3);
    INDArray x = Nd4j.randn(DataType.FLOAT, 40, 64);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 96);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 40, 96);
    INDArray dW = Nd4j.valueArrayOf(new long[] {64, 96}, Float.NaN, DataType.FLOAT);
    SparseLinear.backwardInto(x, w, mask, dy, false, null, dW, null);
    INDArray ref =
        x.castTo(DataType.DOUBLE)
            .transpose()
            .mmul(dy.castTo(DataType.DOUBLE))
            .mul(mask.toDense(DataType.DOUBLE));
    assertTrue(relErr(dW, ref) < TOL);
  }

  @Test
  void sparseLinearTakesTheVectorPathAndMatchesReference() {
    BlockMask mask = (BlockMask) PatternSpec.block(32).random(128, 64, 0.25, 5);
    INDArray x = Nd4j.randn(DataType.FLOAT, 50, 128);
    INDArray w = Nd4j.randn(DataType.FLOAT, 128, 64);
    INDArray bias = Nd4j.randn(DataType.FLOAT, 64);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 50, 64);
    INDArray wd = w.castTo(DataType.DOUBLE).mul(mask.toDense(DataType.DOUBLE));
    INDArray y = SparseLinear.forward(x, w, bias, mask);
    assertEquals('c', y.ordering(), "the vector kernel's row-major output");
    INDArray ref = x.castTo(DataType.DOUBLE).mmul(wd).addRowVector(bias.castTo(DataType.DOUBLE));
    assertTrue(relErr(y, ref) < TOL);
    SparseLinear.Grads g = SparseLinear.backward(x, w, mask, dy, true);
    INDArray dyd = dy.castTo(DataType.DOUBLE);
    assertTrue(relErr(g.dx(), dyd.mmul(wd.transpose())) < TOL);
    assertTrue(relErr(g.dW(), x.castTo(DataType.DOUBLE).transpose().mmul(dyd)) < TOL, "dense dW");
    assertTrue(relErr(g.dBias(), dyd.sum(0)) < TOL);
  }

  @Test
  void nanIsReportedWhereAKeptBlockReadsIt() {
    // block (0, 0) kept, block row 1 empty
    boolean[] flags = {true, false, false, false};
    BlockMask mask = BlockMask.of(64, 64, 32, flags);
    INDArray x = Nd4j.randn(DataType.FLOAT, 20, 64);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 64);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 20, 64);
    INDArray wPruned = w.dup();
    wPruned.putScalar(40, 40, Float.NaN);
    SparseLinear.forward(x, wPruned, null, mask); // pruned weight: not read, no error
    INDArray wKept = w.dup();
    wKept.putScalar(3, 4, Float.NaN);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(x, wKept, null, mask));
    assertTrue(
        e.getMessage().startsWith("w contains 1 NaN value(s) in kept weights"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.backward(x, wKept, mask, dy, false));
    assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
    INDArray xNaN = x.dup();
    xNaN.putScalar(5, 7, Float.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(xNaN, w, null, mask));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    INDArray dyNaN = dy.dup();
    dyNaN.putScalar(2, 50, Float.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.backward(x, w, mask, dyNaN, false));
    assertTrue(e.getMessage().startsWith("dy contains 1 NaN"), e.getMessage());
    // the backward finds x's NaN on the tiles its weight gradient reads (last row: ragged tile)
    INDArray xLastNaN = x.dup();
    xLastNaN.putScalar(x.size(0) - 1, x.size(1) - 1, Float.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparseLinear.backward(xLastNaN, w, mask, dy, false));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    VectorBlockKernels.Gradients g =
        VectorBlockKernels.backward(
            xLastNaN, w, mask, dy, null, Nd4j.zeros(DataType.FLOAT, w.size(0), w.size(1)), null);
    assertTrue(g.activationNaN() && !g.inputNaN(), "x's NaN reported as x's, not dx's");
    g = VectorBlockKernels.backward(xLastNaN, w, mask, dy, dy.mmul(w.transpose()), null, null);
    assertTrue(!g.activationNaN(), "x is not read without dW");
  }

  /**
   * The forward writes a row-major output straight from the micro-kernels: block columns without
   * kept blocks must come out as zeros, whatever the output held, for every block size.
   */
  @ParameterizedTest(name = "b={0} threads={1}")
  @CsvSource({"16,1", "32,2", "64,1", "64,2"})
  void rowMajorForwardZeroesBlockColumnsWithoutKeptBlocks(int b, int threads) {
    BlockSparseKernels.setThreads(threads);
    // 2 block rows x 3 block columns; block column 1 keeps nothing
    boolean[] flags = {true, false, false, true, false, true};
    BlockMask mask = BlockMask.of(2 * b, 3 * b, b, flags);
    INDArray x = Nd4j.randn(DataType.FLOAT, 53, 2 * b);
    INDArray w = Nd4j.randn(DataType.FLOAT, 2 * b, 3 * b);
    INDArray y = Nd4j.valueArrayOf(new long[] {53, 3 * b}, Float.NaN, DataType.FLOAT);
    assertTrue(!VectorBlockKernels.forward(x, w, mask, y), "no NaN reported");
    INDArray ref =
        x.castTo(DataType.DOUBLE)
            .mmul(w.castTo(DataType.DOUBLE).mul(mask.toDense(DataType.DOUBLE)));
    assertTrue(relErr(y, ref) < TOL, "forward " + relErr(y, ref));
    assertEquals(
        0.0,
        y.get(NDArrayIndex.all(), NDArrayIndex.interval(b, 2 * b)).norm1Number().doubleValue(),
        "the empty block column is zero");
  }

  @Test
  void packedBlocksTransposeKeepsEveryValue() {
    BlockMask mask = (BlockMask) PatternSpec.block(16).random(64, 48, 0.5, 9);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 48);
    PackedBlocks byCol = PackedBlocks.byColumn(TileIo.view(w), 48, 1, mask);
    PackedBlocks byRow = byCol.transpose(mask.blockRows());
    assertEquals(mask.keptBlockCount() * 16 * 16, byCol.values.length);
    for (int i = 0; i < byRow.panels(); i++) {
      for (int q = 0; q < byRow.other[i].length; q++) {
        int j = byRow.other[i][q];
        assertTrue(mask.isBlockKept(i, j));
        for (int c = 0; c < 16; c++) {
          for (int r = 0; r < 16; r++) {
            float v = byRow.values[(byRow.start[i] + q * 16 + c) * 16 + r];
            assertEquals(w.getFloat(i * 16 + r, j * 16 + c), v, 0f);
          }
        }
      }
    }
  }

  @Test
  void breakEvenDensityIsMeasuredWithinItsBounds() {
    double d = DenseBreakEven.measure();
    assertTrue(d >= 0.05 && d <= 1.0, "break-even density " + d);
  }
}
