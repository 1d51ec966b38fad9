package org.sparseflow.ops.matmul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/** SparseLinear against the dense masked reference y = x (W o M) + b, in double. */
class SparseLinearEquivalenceTest {

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    String[] patterns = {"unstructured", "block8", "block16", "block32", "block64", "2:4"};
    Random r = new Random(7);
    for (String p : patterns) {
      for (int rep = 0; rep < 3; rep++) {
        int unit = p.startsWith("block") ? Integer.parseInt(p.substring(5)) : 4;
        int nIn = unit * (1 + r.nextInt(4));
        int nOut = (p.startsWith("block") ? unit : 4) * (1 + r.nextInt(4));
        int batch = 1 + r.nextInt(20);
        // two of three block cases stay below SparseLinear.denseAbove() so the block kernels run
        double density =
            p.startsWith("block") && rep < 2
                ? 0.05 + 0.3 * r.nextDouble()
                : 0.05 + 0.95 * r.nextDouble();
        char[] orders = {'c', 'f'};
        out.add(
            Arguments.of(p, batch, nIn, nOut, density, (long) r.nextInt(1000), orders[rep % 2]));
      }
    }
    return out.stream();
  }

  private static double relErr(INDArray a, INDArray b) {
    double diff = a.sub(b).norm2Number().doubleValue();
    double scale = Math.max(1e-12, b.norm2Number().doubleValue());
    return diff / scale;
  }

  @ParameterizedTest(name = "{0} N={1} nIn={2} nOut={3} d={4}")
  @MethodSource("cases")
  void matchesDenseMaskedReference(
      String pattern, int batch, int nIn, int nOut, double density, long seed, char order) {
    Nd4j.getRandom().setSeed(seed);
    SparseMask mask = PatternSpec.parse(pattern).random(nIn, nOut, density, seed);
    INDArray x = Nd4j.randn(DataType.DOUBLE, batch, nIn).dup(order);
    INDArray w = Nd4j.randn(DataType.DOUBLE, nIn, nOut).dup(order);
    INDArray b = Nd4j.randn(DataType.DOUBLE, nOut);
    INDArray dy = Nd4j.randn(DataType.DOUBLE, batch, nOut).dup(order);
    INDArray m = mask.toDense(DataType.DOUBLE);
    INDArray wm = w.mul(m);

    INDArray yRef = x.mmul(wm).addRowVector(b);
    INDArray y = SparseLinear.forward(x, w, b, mask);
    assertTrue(relErr(y, yRef) < 1e-12, "forward rel err " + relErr(y, yRef));

    SparseLinear.Grads g = SparseLinear.backward(x, w, mask, dy, false);
    assertTrue(relErr(g.dx(), dy.mmul(wm.transpose())) < 1e-12, "dx");
    INDArray dwDense = x.transpose().mmul(dy);
    assertTrue(relErr(g.dW(), dwDense.mul(m)) < 1e-12, "dW masked");
    assertEquals(
        0.0, g.dW().mul(m.rsub(1.0)).norm2Number().doubleValue(), 0.0, "dW zero outside mask");
    assertTrue(relErr(g.dBias(), dy.sum(0)) < 1e-12, "dBias");

    SparseLinear.Grads gd = SparseLinear.backward(x, w, mask, dy, true);
    assertTrue(relErr(gd.dW(), dwDense) < 1e-12, "dense dW");
  }

  @Test
  void flopCountsScaleWithKeptEntries() {
    SparseMask mask = PatternSpec.parse("block16").random(64, 128, 0.25, 2);
    assertEquals(2.0 * 10 * mask.nnz(), SparseLinear.forwardFlops(10, mask), 1e-6);
    assertEquals(2.0 * 10 * 64 * 128 * 0.25, SparseLinear.forwardFlops(10, 64, 128, 0.25), 1e-6);
    assertEquals(
        2 * SparseLinear.forwardFlops(10, mask), SparseLinear.backwardFlops(10, mask, false), 1e-6);
    assertEquals(
        SparseLinear.forwardFlops(10, mask) + 2.0 * 10 * 64 * 128,
        SparseLinear.backwardFlops(10, mask, true),
        1e-6);
  }

  @Test
  void halfPrecisionUsesTheDenseMaskedFallback() {
    SparseMask mask = PatternSpec.parse("block8").random(16, 16, 0.5, 2);
    INDArray x = Nd4j.rand(DataType.FLOAT, 4, 16);
    INDArray w = Nd4j.rand(DataType.FLOAT, 16, 16);
    INDArray ref = x.mmul(w.mul(mask.toDense(DataType.FLOAT)));
    INDArray y =
        SparseLinear.forward(x.castTo(DataType.FLOAT16), w.castTo(DataType.FLOAT16), null, mask);
    assertEquals(DataType.FLOAT16, y.dataType());
    assertTrue(relErr(y.castTo(DataType.FLOAT), ref) < 1e-2);
  }

  @Test
  void blasThreadCountIsRestoredAfterKernels() {
    int before = Nd4j.factory().blas().getMaxThreads();
    SparseMask mask = PatternSpec.parse("block8").random(32, 32, 0.5, 1);
    INDArray x = Nd4j.rand(DataType.FLOAT, 8, 32);
    SparseLinear.backward(
        x,
        SparseLinear.forward(x, Nd4j.rand(DataType.FLOAT, 32, 32), null, mask).transpose().mmul(x),
        mask,
        Nd4j.rand(DataType.FLOAT, 8, 32),
        false);
    assertEquals(before, Nd4j.factory().blas().getMaxThreads());
  }

  @Test
  void stridedViewsAndFloatMatchReference() {
    // operands are views into larger arrays (non-zero offsets), in FLOAT
    SparseMask mask = PatternSpec.parse("block16").random(64, 96, 0.3, 3);
    INDArray bigX = Nd4j.rand(DataType.FLOAT, 40, 100);
    INDArray x = bigX.get(NDArrayIndex.interval(5, 37), NDArrayIndex.interval(20, 84));
    INDArray bigW = Nd4j.rand(DataType.FLOAT, 70, 100).dup('f');
    INDArray w = bigW.get(NDArrayIndex.interval(3, 67), NDArrayIndex.interval(1, 97));
    INDArray yRef = x.mmul(w.mul(mask.toDense(DataType.FLOAT)));
    INDArray y = SparseLinear.forward(x, w, null, mask);
    assertTrue(relErr(y, yRef) < 1e-5, "rel err " + relErr(y, yRef));
    INDArray out =
        Nd4j.zeros(DataType.FLOAT, 60, 120)
            .get(NDArrayIndex.interval(10, 42), NDArrayIndex.interval(7, 103));
    SparseLinear.forwardInto(x, w, null, mask, out);
    assertTrue(relErr(out, yRef) < 1e-5);
  }

  /**
   * A block mask whose first column block and first row block are empty (their output panels must
   * be cleared).
   */
  private static SparseMask maskWithEmptyPanels(int nIn, int nOut, int b, long seed) {
    Nd4j.getRandom().setSeed(seed);
    INDArray keep = Nd4j.rand(DataType.DOUBLE, nIn / b, nOut / b);
    keep.getColumn(0).assign(0);
    keep.getRow(0).assign(0);
    keep.putScalar(1, 1, 1.0); // at least one kept block
    INDArray scores = Nd4j.zeros(DataType.DOUBLE, nIn, nOut);
    for (int i = 0; i < nIn / b; i++) {
      for (int j = 0; j < nOut / b; j++) {
        if (keep.getDouble(i, j) > 0.7 || (i == 1 && j == 1)) {
          scores
              .get(
                  NDArrayIndex.interval(i * b, (i + 1) * b),
                  NDArrayIndex.interval(j * b, (j + 1) * b))
              .assign(1.0);
        }
      }
    }
    long kept = (long) scores.sumNumber().doubleValue() / (b * b);
    return PatternSpec.block(b).fromScores(scores, (double) kept / ((nIn / b) * (nOut / b)));
  }

  @Test
  void outputsFilledWithNaNAreOverwrittenIncludingEmptyPanels() {
    for (char order : new char[] {'c', 'f'}) {
      SparseMask mask = maskWithEmptyPanels(64, 96, 16, 5);
      assertTrue(
          mask.density() <= SparseLinear.denseAbove(), "mask must take the block-kernel path");
      INDArray x = Nd4j.randn(DataType.DOUBLE, 24, 64);
      INDArray w = Nd4j.randn(DataType.DOUBLE, 64, 96);
      INDArray dy = Nd4j.randn(DataType.DOUBLE, 24, 96);
      INDArray wm = w.mul(mask.toDense(DataType.DOUBLE));
      INDArray y = Nd4j.create(DataType.DOUBLE, new long[] {24, 96}, order).assign(Double.NaN);
      SparseLinear.forwardInto(x, w, null, mask, y);
      assertTrue(relErr(y, x.mmul(wm)) < 1e-12, order + " forward into NaN-filled y");
      assertEquals(
          0.0, y.getColumn(0).norm2Number().doubleValue(), 0.0, "empty column panel cleared");
      INDArray dx = Nd4j.create(DataType.DOUBLE, new long[] {24, 64}, order).assign(Double.NaN);
      INDArray dW = Nd4j.create(DataType.DOUBLE, new long[] {64, 96}, order).assign(Double.NaN);
      SparseLinear.backwardInto(x, w, mask, dy, false, dx, dW, null);
      assertTrue(relErr(dx, dy.mmul(wm.transpose())) < 1e-12, order + " dx into NaN-filled dx");
      assertEquals(0.0, dx.getColumn(0).norm2Number().doubleValue(), 0.0, "empty dx panel cleared");
      assertTrue(
          relErr(dW, x.transpose().mmul(dy).mul(mask.toDense(DataType.DOUBLE))) < 1e-12,
          order + " dW");
    }
  }

  @Test
  void blockKernelPathReportsNaNWhereItMattersOnly() {
    SparseMask mask = maskWithEmptyPanels(64, 96, 16, 6);
    INDArray x = Nd4j.randn(DataType.FLOAT, 8, 64);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 96);
    INDArray m = mask.toDense(DataType.FLOAT);
    // a NaN in a pruned weight is never read: no error, same result as with that weight zeroed
    INDArray wPrunedNaN = w.dup();
    wPrunedNaN.putScalar(0, 0, Float.NaN); // row block 0 is empty
    INDArray y = SparseLinear.forward(x, wPrunedNaN, null, mask);
    assertTrue(relErr(y, x.mmul(w.mul(m))) < 1e-5, "pruned NaN ignored");
    // a NaN in a kept weight is named
    INDArray wKeptNaN = w.dup();
    wKeptNaN.putScalar(17, 17, Float.NaN); // block (1, 1) is kept
    IllegalArgumentException e =
        Assertions.assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(x, wKeptNaN, null, mask));
    assertTrue(
        e.getMessage().startsWith("w contains 1 NaN value(s) in kept weights"), e.getMessage());
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseLinear.backward(x, wKeptNaN, mask, Nd4j.randn(DataType.FLOAT, 8, 96), false));
    assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
    // the same into a row-major dx (probed as a whole, not panel by panel)
    INDArray dxRowMajor = Nd4j.create(DataType.FLOAT, new long[] {8, 64}, 'c');
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseLinear.backwardInto(
                    x,
                    wKeptNaN,
                    mask,
                    Nd4j.randn(DataType.FLOAT, 8, 96),
                    false,
                    dxRowMajor,
                    null,
                    null));
    assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
    INDArray dyOk = Nd4j.randn(DataType.FLOAT, 8, 96);
    SparseLinear.backwardInto(x, wPrunedNaN, mask, dyOk, false, dxRowMajor, null, null);
    assertTrue(
        relErr(dxRowMajor, dyOk.mmul(w.mul(m).transpose())) < 1e-5,
        "row-major dx, pruned NaN ignored");
    // a NaN in an input a kept block reads is named
    INDArray xNaN = x.dup();
    xNaN.putScalar(3, 20, Float.NaN); // column 20 is in row block 1, which has a kept block
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(xNaN, w, null, mask));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    // the same with a row-major output (its panels are probed across rows, not row by row)
    INDArray yRowMajor = Nd4j.create(DataType.FLOAT, new long[] {8, 96}, 'c');
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class,
            () -> SparseLinear.forwardInto(xNaN, w, null, mask, yRowMajor));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    INDArray tall = Nd4j.randn(DataType.FLOAT, 40, 64);
    tall.putScalar(37, 20, Float.NaN); // more rows than the panel is wide: the strided probe
    INDArray yTall = Nd4j.create(DataType.FLOAT, new long[] {40, 96}, 'c');
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class,
            () -> SparseLinear.forwardInto(tall, w, null, mask, yTall));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    INDArray dyNaN = Nd4j.randn(DataType.FLOAT, 8, 96);
    dyNaN.putScalar(2, 0, Float.NaN);
    e =
        Assertions.assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.backward(x, w, mask, dyNaN, false));
    assertTrue(e.getMessage().startsWith("dy contains 1 NaN"), e.getMessage());
  }

  /**
   * The NaN probe reads exactly the array's elements, also for views at an offset into a larger
   * buffer.
   */
  @Test
  void probeSumSeesExactlyTheViewsElements() {
    INDArray flat = Nd4j.rand(DataType.FLOAT, 1, 300);
    INDArray view =
        flat.get(NDArrayIndex.point(0), NDArrayIndex.interval(100, 200)).reshape('f', 10, 10);
    assertEquals(
        Transforms.abs(view).sumNumber().doubleValue(), BlockSparseKernels.probeSum(view), 1e-4);
    flat.putScalar(0, 99, Float.NaN);
    flat.putScalar(0, 200, Float.NaN);
    assertFalse(
        Double.isNaN(BlockSparseKernels.probeSum(view)), "NaN outside the view is not read");
    flat.putScalar(0, 150, Float.NaN);
    assertTrue(Double.isNaN(BlockSparseKernels.probeSum(view)), "NaN inside the view is found");
  }
}
