package org.sparseflow.ops.matmul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * The dense path of {@link SparseLinear} ({@link DenseGemm}: one BLAS GEMM on the operands as they
 * are) against a dense reference in double: every mix of row-major, column-major, offset views with
 * one unit stride (direct BLAS) and fully strided views (ND4J fallback), transposed operands, fp32
 * and fp64, ragged sizes, outputs full of NaN garbage, 1 and 2 BLAS threads, block sizes 16 / 32 /
 * 64 at density 1 and above the break-even density, and NaN reporting.
 */
class DenseGemmTest {

  private static final Blas BLAS = Nd4j.factory().blas();
  private static final int BLAS_THREADS = BLAS.getMaxThreads();

  @AfterEach
  void restoreThreads() {
    BLAS.setMaxThreads(BLAS_THREADS);
  }

  /** A [rows x cols] array of a's type with a's values in the given layout. */
  static INDArray layout(INDArray a, String kind) {
    switch (kind) {
      case "c":
        return a.dup('c');
      case "f":
        return a.dup('f');
      case "view":
        {
          // an offset view with a row stride wider than its row (BLAS addresses it directly)
          INDArray big = Nd4j.rand(a.dataType(), a.rows() + 3, a.columns() + 5).muli(1e3);
          INDArray v =
              big.get(
                  NDArrayIndex.interval(2, 2 + a.rows()),
                  NDArrayIndex.interval(3, 3 + a.columns()));
          v.assign(a);
          return v;
        }
      default:
        {
          // every other row and column: no unit stride, BLAS cannot address it
          INDArray big = Nd4j.rand(a.dataType(), 2 * a.rows(), 2 * a.columns()).muli(1e3);
          INDArray v =
              big.get(
                  NDArrayIndex.interval(0, 2, 2 * a.rows()),
                  NDArrayIndex.interval(0, 2, 2 * a.columns()));
          v.assign(a);
          return v;
        }
    }
  }

  static Stream<Arguments> layouts() {
    List<Arguments> out = new ArrayList<>();
    String[] kinds = {"c", "f", "view", "strided"};
    int i = 0;
    for (String a : kinds) {
      for (String b : kinds) {
        for (String c : kinds) {
          DataType dt = (i % 3 == 0) ? DataType.DOUBLE : DataType.FLOAT;
          out.add(Arguments.of(a, b, c, i % 2 == 0, i % 4 < 2, dt, 1 + i % 2));
          i++;
        }
      }
    }
    return out.stream();
  }

  private static double relErr(INDArray a, INDArray ref) {
    INDArray d = a.castTo(DataType.DOUBLE);
    return d.sub(ref).norm2Number().doubleValue()
        / Math.max(1e-12, ref.norm2Number().doubleValue());
  }

  private static double tol(DataType dt) {
    return dt == DataType.DOUBLE ? 1e-12 : 2e-6;
  }

  @ParameterizedTest(name = "a={0} b={1} c={2} tA={3} tB={4} {5} blasThreads={6}")
  @MethodSource("layouts")
  void gemmMatchesDoubleReferenceForEveryLayout(
      String ka, String kb, String kc, boolean ta, boolean tb, DataType dt, int threads) {
    BLAS.setMaxThreads(threads);
    int m = 37;
    int n = 29;
    int k = 53;
    Nd4j.getRandom().setSeed(m * 31L + n + (ta ? 1 : 0) + (tb ? 2 : 0));
    INDArray a0 = Nd4j.randn(DataType.DOUBLE, ta ? k : m, ta ? m : k);
    INDArray b0 = Nd4j.randn(DataType.DOUBLE, tb ? n : k, tb ? k : n);
    INDArray ref = (ta ? a0.transpose() : a0).mmul(tb ? b0.transpose() : b0);
    INDArray a = layout(a0.castTo(dt), ka);
    INDArray b = layout(b0.castTo(dt), kb);
    INDArray c = layout(Nd4j.valueArrayOf(new long[] {m, n}, Double.NaN, dt), kc);
    boolean direct = !ka.equals("strided") && !kb.equals("strided") && !kc.equals("strided");
    assertEquals(direct, DenseGemm.direct(a, b, c), "BLAS is called directly on these layouts");
    DenseGemm.gemm(a, ta, b, tb, c);
    assertTrue(relErr(c, ref) < tol(dt), "rel err " + relErr(c, ref));
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("sumCases")
  void columnSumsMatchDoubleReference(String kind, DataType dt) {
    Nd4j.getRandom().setSeed(5);
    INDArray g0 = Nd4j.randn(DataType.DOUBLE, 131, 45);
    INDArray g = layout(g0.castTo(dt), kind);
    INDArray sums = Nd4j.valueArrayOf(new long[] {45}, Double.NaN, dt);
    DenseGemm.columnSums(g, sums);
    assertTrue(relErr(sums, g0.sum(0)) < tol(dt), "rel err " + relErr(sums, g0.sum(0)));
  }

  static Stream<Arguments> sumCases() {
    List<Arguments> out = new ArrayList<>();
    for (String kind : new String[] {"c", "f", "view", "strided"}) {
      out.add(Arguments.of(kind, DataType.FLOAT));
      out.add(Arguments.of(kind, DataType.DOUBLE));
    }
    return out.stream();
  }

  static Stream<Arguments> denseLayerCases() {
    List<Arguments> out = new ArrayList<>();
    int i = 0;
    for (int b : new int[] {16, 32, 64}) {
      for (double density : new double[] {1.0, 0.95}) {
        String[] kinds = {"c", "f", "view"};
        out.add(Arguments.of(b, density, kinds[i % 3], 1 + i % 2));
        i++;
      }
    }
    return out.stream();
  }

  /**
   * SparseLinear with a mask that keeps every block (or more than the break-even density) takes the
   * dense path: forward, dx, dW (masked and dense) and dBias against the double reference.
   */
  @ParameterizedTest(name = "b={0} d={1} layout={2} blasThreads={3}")
  @MethodSource("denseLayerCases")
  void sparseLinearDensePathMatchesReference(int b, double density, String kind, int threads) {
    BLAS.setMaxThreads(threads);
    int nIn = 3 * b;
    int nOut = 2 * b;
    int t = 41; // not a multiple of anything
    BlockMask mask = (BlockMask) PatternSpec.block(b).random(nIn, nOut, density, 3L * b);
    // at 0.95 the mask keeps all but a few blocks; the dense path runs when it is above break-even
    assertTrue(mask.density() >= 1.0 || mask.density() > 0.6);
    Nd4j.getRandom().setSeed(b);
    INDArray x0 = Nd4j.randn(DataType.DOUBLE, t, nIn);
    INDArray w0 = Nd4j.randn(DataType.DOUBLE, nIn, nOut);
    INDArray dy0 = Nd4j.randn(DataType.DOUBLE, t, nOut);
    INDArray bias0 = Nd4j.randn(DataType.DOUBLE, nOut);
    INDArray m = mask.toDense(DataType.DOUBLE);
    INDArray wm = w0.mul(m);
    INDArray x = layout(x0.castTo(DataType.FLOAT), kind);
    INDArray w = layout(w0.castTo(DataType.FLOAT), kind);
    INDArray dy = layout(dy0.castTo(DataType.FLOAT), kind);
    INDArray bias = bias0.castTo(DataType.FLOAT);

    INDArray y = SparseLinear.forward(x, w, bias, mask);
    assertTrue(relErr(y, x0.mmul(wm).addRowVector(bias0)) < 2e-6, "forward");
    INDArray yInto = layout(Nd4j.valueArrayOf(new long[] {t, nOut}, Float.NaN), kind);
    SparseLinear.forwardInto(x, w, bias, mask, yInto);
    assertTrue(relErr(yInto, x0.mmul(wm).addRowVector(bias0)) < 2e-6, "forwardInto");

    SparseLinear.Grads g = SparseLinear.backward(x, w, mask, dy, false);
    assertTrue(relErr(g.dx(), dy0.mmul(wm.transpose())) < 2e-6, "dx");
    INDArray dwDense = x0.transpose().mmul(dy0);
    assertTrue(relErr(g.dW(), dwDense.mul(m)) < 2e-6, "dW masked");
    assertEquals(0.0, g.dW().castTo(DataType.DOUBLE).mul(m.rsub(1.0)).norm2Number().doubleValue());
    assertTrue(relErr(g.dBias(), dy0.sum(0)) < 2e-6, "dBias");
    SparseLinear.Grads gd = SparseLinear.backward(x, w, mask, dy, true);
    assertTrue(relErr(gd.dW(), dwDense) < 2e-6, "dense dW");

    INDArray dx = layout(Nd4j.valueArrayOf(new long[] {t, nIn}, Float.NaN), kind);
    INDArray dW = layout(Nd4j.valueArrayOf(new long[] {nIn, nOut}, Float.NaN), kind);
    INDArray db = Nd4j.valueArrayOf(new long[] {nOut}, Float.NaN, DataType.FLOAT);
    SparseLinear.backwardInto(x, w, mask, dy, false, dx, dW, db);
    assertTrue(relErr(dx, dy0.mmul(wm.transpose())) < 2e-6, "dx into garbage");
    assertTrue(relErr(dW, dwDense.mul(m)) < 2e-6, "dW into garbage");
    assertTrue(relErr(db, dy0.sum(0)) < 2e-6, "dBias into garbage");
  }

  @Test
  void densePathReportsNaNByArgumentName() {
    BlockMask mask = (BlockMask) PatternSpec.block(32).random(64, 64, 1.0, 1);
    INDArray x = Nd4j.randn(DataType.FLOAT, 9, 64);
    INDArray w = Nd4j.randn(DataType.FLOAT, 64, 64);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 9, 64);
    INDArray xNaN = x.dup();
    xNaN.putScalar(4, 60, Float.NaN);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(xNaN, w, null, mask));
    assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
    INDArray wNaN = w.dup();
    wNaN.putScalar(1, 2, Float.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.forward(x, wNaN, null, mask));
    assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.backward(x, wNaN, mask, dy, false));
    assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
    INDArray dyNaN = dy.dup();
    dyNaN.putScalar(8, 0, Float.NaN);
    dyNaN.putScalar(0, 8, Float.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseLinear.backward(x, w, mask, dyNaN, false));
    assertTrue(e.getMessage().startsWith("dy contains 2 NaN"), e.getMessage());
  }

  /**
   * The dense forward finds a NaN from one row and one column of its output: a NaN at every
   * position of x and of W, zero weights included (NaN times zero is NaN), is named, into a new y
   * and into row- and column-major outputs.
   */
  @Test
  void denseForwardNamesANaNAtEveryPositionOfXAndW() {
    BlockMask mask = (BlockMask) PatternSpec.block(16).random(32, 48, 1.0, 1);
    INDArray x = Nd4j.randn(DataType.FLOAT, 5, 32);
    INDArray w = Nd4j.randn(DataType.FLOAT, 32, 48);
    w.getRow(3).assign(0); // a row of zero weights: x's column 3 still reaches y
    INDArray[] outs = {
      Nd4j.create(DataType.FLOAT, new long[] {5, 48}, 'c'),
      Nd4j.create(DataType.FLOAT, new long[] {5, 48}, 'f')
    };
    int named = 0;
    for (int i = 0; i < x.length(); i++) {
      INDArray xNaN = x.dup();
      xNaN.putScalar(i, Float.NaN);
      for (INDArray y : outs) {
        IllegalArgumentException e =
            assertThrows(
                IllegalArgumentException.class,
                () -> SparseLinear.forwardInto(xNaN, w, null, mask, y),
                "x position " + i);
        assertTrue(e.getMessage().startsWith("x contains 1 NaN"), e.getMessage());
        named++;
      }
    }
    for (int i = 0; i < w.length(); i++) {
      INDArray wNaN = w.dup();
      wNaN.putScalar(i, Float.NaN);
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> SparseLinear.forward(x, wNaN, null, mask),
              "w position " + i);
      assertTrue(e.getMessage().startsWith("w contains 1 NaN"), e.getMessage());
      named++;
    }
    assertEquals(2 * 5 * 32 + 32 * 48, named);
    // no NaN: no error, and the product
    INDArray y = SparseLinear.forward(x, w, null, mask);
    assertTrue(relErr(y, x.mmul(w)) < 1e-6);
  }

  @Test
  void halfPrecisionFallsBackToNd4j() {
    SparseMask mask = PatternSpec.block(16).random(32, 32, 1.0, 1);
    INDArray x = Nd4j.randn(DataType.FLOAT, 5, 32).castTo(DataType.FLOAT16);
    INDArray w = Nd4j.randn(DataType.FLOAT, 32, 32).castTo(DataType.FLOAT16);
    assertFalse(DenseGemm.direct(x, w));
    INDArray y = SparseLinear.forward(x, w, null, mask);
    INDArray ref = x.castTo(DataType.DOUBLE).mmul(w.castTo(DataType.DOUBLE));
    assertTrue(relErr(y, ref) < 5e-3, "rel err " + relErr(y, ref));
  }
}
