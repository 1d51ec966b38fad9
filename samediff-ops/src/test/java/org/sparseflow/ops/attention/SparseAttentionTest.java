package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.ops.attention.AttentionTestUtil.rand;
import static org.sparseflow.ops.attention.AttentionTestUtil.relErr;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

class SparseAttentionTest {

  /** One spec per pattern kind plus unions; sizes chosen for T=32, block 4. */
  static final String[] PATTERNS = {
    "dense",
    "local:6",
    "strided:5",
    "fixed:8:2",
    "global:3",
    "random:2:seed=7",
    "local:8+strided:8",
    "global:2+local:4",
    "fixed:8:1+random:1:seed=3"
  };

  @Test
  void denseCausalMatchesPlainReference() {
    int t = 64;
    INDArray q = rand(1, DataType.DOUBLE, 2, 3, t, 16);
    INDArray k = rand(2, DataType.DOUBLE, 2, 3, t, 16);
    INDArray v = rand(3, DataType.DOUBLE, 2, 3, t, 16);
    double scale = SparseAttention.defaultScale(16);
    BlockLayout layout = AttentionPattern.parse("dense").layout(t, 16, 3);
    INDArray out = SparseAttention.forward(q, k, v, layout, scale).out();
    INDArray ref =
        AttentionTestUtil.toArray(
            AttentionTestUtil.reference(
                q, k, v, new boolean[][][] {AttentionTestUtil.causal(t)}, scale));
    assertTrue(relErr(out, ref) < 1e-6, "rel err " + relErr(out, ref));
    // and the ND4J matmul-softmax-matmul reference with the expanded mask
    INDArray nd = SparseAttention.denseMasked(q, k, v, layout, scale);
    assertTrue(relErr(nd, ref) < 1e-6, "rel err nd4j " + relErr(nd, ref));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "dense",
        "local:6",
        "strided:5",
        "fixed:8:2",
        "global:3",
        "global:9",
        "random:2:seed=7",
        "local:8+strided:8",
        "global:2+local:4",
        "fixed:8:1+random:1:seed=3"
      })
  void matchesDenseMaskedReference(String spec) {
    Random r = new Random(spec.hashCode());
    for (int trial = 0; trial < 2; trial++) {
      int block = new int[] {2, 4, 8}[r.nextInt(3)];
      int t = block * (2 + r.nextInt(6));
      int heads = 1 + r.nextInt(3);
      int batch = 1 + r.nextInt(2);
      int d = 1 + r.nextInt(9);
      INDArray q = rand(r.nextLong(), DataType.DOUBLE, batch, heads, t, d);
      INDArray k = rand(r.nextLong(), DataType.DOUBLE, batch, heads, t, d);
      INDArray v = rand(r.nextLong(), DataType.DOUBLE, batch, heads, t, d);
      double scale = 0.3 + r.nextDouble();
      BlockLayout layout = AttentionPattern.parse(spec).layout(t, block, heads);
      INDArray out = SparseAttention.forward(q, k, v, layout, scale).out();
      INDArray ref =
          AttentionTestUtil.toArray(
              AttentionTestUtil.reference(q, k, v, AttentionTestUtil.masksOf(layout), scale));
      assertTrue(
          relErr(out, ref) < 1e-9,
          spec + " T=" + t + " b=" + block + " rel err " + relErr(out, ref));
    }
  }

  @Test
  void floatMatchesDouble() {
    INDArray q = rand(4, DataType.DOUBLE, 1, 2, 32, 8);
    INDArray k = rand(5, DataType.DOUBLE, 1, 2, 32, 8);
    INDArray v = rand(6, DataType.DOUBLE, 1, 2, 32, 8);
    BlockLayout layout = AttentionPattern.parse("local:8+strided:8").layout(32, 4, 2);
    INDArray o64 = SparseAttention.forward(q, k, v, layout, 0.35).out();
    SparseAttention.Result r32 =
        SparseAttention.forward(
            q.castTo(DataType.FLOAT),
            k.castTo(DataType.FLOAT),
            v.castTo(DataType.FLOAT),
            layout,
            0.35);
    assertEquals(DataType.FLOAT, r32.out().dataType());
    assertTrue(relErr(r32.out(), o64) < 1e-5);
  }

  @Test
  void layoutWithOneHeadIsSharedByAllHeads() {
    INDArray q = rand(7, DataType.DOUBLE, 1, 3, 16, 4);
    BlockLayout one = AttentionPattern.parse("local:4").layout(16, 4, 1);
    BlockLayout three = AttentionPattern.parse("local:4").layout(16, 4, 3);
    assertEquals(
        0.0,
        relErr(
            SparseAttention.forward(q, q, q, one, 0.5).out(),
            SparseAttention.forward(q, q, q, three, 0.5).out()),
        1e-15);
  }

  @Test
  void acceptsNonContiguousViews() {
    INDArray big =
        rand(8, DataType.DOUBLE, 1, 16, 2, 4).permute(0, 2, 1, 3); // [1,2,16,4] view, not 'c'
    BlockLayout layout = AttentionPattern.parse("local:4").layout(16, 4, 2);
    INDArray out = SparseAttention.forward(big, big, big, layout, 0.5).out();
    INDArray ref =
        SparseAttention.forward(big.dup('c'), big.dup('c'), big.dup('c'), layout, 0.5).out();
    assertEquals(0.0, relErr(out, ref), 1e-15);
  }

  @Test
  void futureTokensDoNotChangeEarlierOutputs() {
    int t = 32;
    for (String spec : PATTERNS) {
      INDArray q = rand(9, DataType.DOUBLE, 1, 2, t, 4);
      INDArray k = rand(10, DataType.DOUBLE, 1, 2, t, 4);
      INDArray v = rand(11, DataType.DOUBLE, 1, 2, t, 4);
      BlockLayout layout = AttentionPattern.parse(spec).layout(t, 4, 2);
      INDArray out = SparseAttention.forward(q, k, v, layout, 0.5).out();
      int cut = 13; // perturb positions >= cut (mid-block) in q, k and v
      for (INDArray a : new INDArray[] {q, k, v}) {
        a.get(
                NDArrayIndex.all(),
                NDArrayIndex.all(),
                NDArrayIndex.interval(cut, t),
                NDArrayIndex.all())
            .addi(rand(12, DataType.DOUBLE, 1, 2, t - cut, 4));
      }
      INDArray out2 = SparseAttention.forward(q, k, v, layout, 0.5).out();
      INDArray past =
          out.get(
              NDArrayIndex.all(),
              NDArrayIndex.all(),
              NDArrayIndex.interval(0, cut),
              NDArrayIndex.all());
      INDArray past2 =
          out2.get(
              NDArrayIndex.all(),
              NDArrayIndex.all(),
              NDArrayIndex.interval(0, cut),
              NDArrayIndex.all());
      assertEquals(0.0, past.sub(past2).amaxNumber().doubleValue(), 0.0, spec);
      INDArray fut =
          out.get(
              NDArrayIndex.all(),
              NDArrayIndex.all(),
              NDArrayIndex.interval(cut, t),
              NDArrayIndex.all());
      INDArray fut2 =
          out2.get(
              NDArrayIndex.all(),
              NDArrayIndex.all(),
              NDArrayIndex.interval(cut, t),
              NDArrayIndex.all());
      assertTrue(
          fut.sub(fut2).amaxNumber().doubleValue() > 1e-3, spec + ": perturbation had no effect");
    }
  }

  @Test
  void lseIsLogSumExpOfKeptScores() {
    INDArray q = rand(13, DataType.DOUBLE, 1, 1, 8, 3);
    INDArray k = rand(14, DataType.DOUBLE, 1, 1, 8, 3);
    BlockLayout layout = AttentionPattern.parse("dense").layout(8, 2, 1);
    SparseAttention.Result r = SparseAttention.forward(q, k, k, layout, 0.7);
    for (int i = 0; i < 8; i++) {
      double s = 0;
      for (int j = 0; j <= i; j++) {
        double dot = 0;
        for (int x = 0; x < 3; x++) {
          dot += q.getDouble(0, 0, i, x) * k.getDouble(0, 0, j, x);
        }
        s += Math.exp(0.7 * dot);
      }
      assertEquals(Math.log(s), r.lse().getDouble(0, 0, i), 1e-12);
    }
  }

  @Test
  void badInputsAreRejectedWithClearMessages() {
    BlockLayout layout = AttentionPattern.parse("local:4").layout(16, 4, 2);
    INDArray ok = Nd4j.rand(DataType.DOUBLE, 1, 2, 16, 4);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseAttention.forward(
                    ok, Nd4j.rand(DataType.DOUBLE, 1, 2, 16, 5), ok, layout, 0.5));
    assertTrue(e.getMessage().contains("k=[1, 2, 16, 5]"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseAttention.forward(
                    Nd4j.rand(DataType.DOUBLE, 1, 2, 12, 4),
                    Nd4j.rand(DataType.DOUBLE, 1, 2, 12, 4),
                    Nd4j.rand(DataType.DOUBLE, 1, 2, 12, 4),
                    layout,
                    0.5));
    assertTrue(
        e.getMessage().contains("T=12") && e.getMessage().contains("seqLen=16"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseAttention.forward(Nd4j.rand(DataType.DOUBLE, 2, 16, 4), ok, ok, layout, 0.5));
    assertTrue(
        e.getMessage().contains("q shape=[2, 16, 4]") && e.getMessage().contains("rank 4"),
        e.getMessage());
    INDArray nan = ok.dup();
    nan.putScalar(new long[] {0, 1, 3, 2}, Double.NaN);
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparseAttention.forward(ok, ok, nan, layout, 0.5));
    assertTrue(e.getMessage().startsWith("v contains NaN"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparseAttention.forward(ok, ok, ok, layout, -1));
    assertTrue(e.getMessage().contains("scale=-1.0"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseAttention.forward(
                    ok, ok, ok, AttentionPattern.parse("local:4").layout(16, 4, 3), 0.5));
    assertTrue(
        e.getMessage().contains("heads=2") && e.getMessage().contains("numHeads=3"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                SparseAttention.forward(
                    ok.castTo(DataType.INT32),
                    ok.castTo(DataType.INT32),
                    ok.castTo(DataType.INT32),
                    layout,
                    0.5));
    assertTrue(e.getMessage().contains("dataType=INT"), e.getMessage());
  }
}
