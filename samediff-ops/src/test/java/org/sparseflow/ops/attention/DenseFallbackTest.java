package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.ops.attention.AttentionTestUtil.rand;
import static org.sparseflow.ops.attention.AttentionTestUtil.relErr;

import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** The ND4J-only path used on backends without OpenBLAS gives the kernel's results. */
class DenseFallbackTest {

  @Test
  void fallbackMatchesKernelForwardAndBackward() {
    BlockLayout layout =
        AttentionPattern.parse("local:4+strided:3+fixed:8:1+random:1:seed=4").layout(24, 4, 2);
    INDArray q = rand(41, DataType.DOUBLE, 2, 2, 24, 5);
    INDArray k = rand(42, DataType.DOUBLE, 2, 2, 24, 5);
    INDArray v = rand(43, DataType.DOUBLE, 2, 2, 24, 5);
    INDArray dOut = rand(44, DataType.DOUBLE, 2, 2, 24, 5);
    SparseAttention.Result r = SparseAttention.forward(q, k, v, layout, 0.4);
    INDArray out = Nd4j.create(DataType.DOUBLE, 2, 2, 24, 5);
    INDArray lse = Nd4j.create(DataType.DOUBLE, 2, 2, 24);
    DenseFallback.forward(q, k, v, layout, 0.4, out, lse);
    assertTrue(relErr(out, r.out()) < 1e-12);
    assertTrue(relErr(lse, r.lse()) < 1e-12);
    assertBackwardMatchesFallback(q, k, v, r, dOut, layout, 0.4);
  }

  /** Large enough for the multi-threaded path (work above AttentionThreads.SERIAL_WORK). */
  @Test
  void parallelPathMatchesDenseReference() {
    int t = 256;
    BlockLayout layout =
        AttentionPattern.parse("local:32+strided:48+fixed:64:2+random:1:seed=9").layout(t, 16, 4);
    INDArray q = rand(51, DataType.DOUBLE, 1, 4, t, 16);
    INDArray k = rand(52, DataType.DOUBLE, 1, 4, t, 16);
    INDArray v = rand(53, DataType.DOUBLE, 1, 4, t, 16);
    INDArray dOut = rand(54, DataType.DOUBLE, 1, 4, t, 16);
    assertTrue(1L * 4 * t * 16 * t >= AttentionThreads.SERIAL_WORK);
    SparseAttention.Result r = SparseAttention.forward(q, k, v, layout, 0.25);
    assertTrue(relErr(r.out(), SparseAttention.denseMasked(q, k, v, layout, 0.25)) < 1e-10);
    assertBackwardMatchesFallback(q, k, v, r, dOut, layout, 0.25);
  }

  /** The kernel's backward equals the dense fallback's (dq, dk, dv), relative error < 1e-10. */
  private static void assertBackwardMatchesFallback(
      INDArray q,
      INDArray k,
      INDArray v,
      SparseAttention.Result r,
      INDArray dOut,
      BlockLayout layout,
      double scale) {
    SparseAttention.Grads g = SparseAttention.backward(q, k, v, r, dOut, layout, scale);
    INDArray dq = q.like();
    INDArray dk = q.like();
    INDArray dv = q.like();
    DenseFallback.backward(q, k, v, r.out(), dOut, layout, scale, dq, dk, dv);
    assertTrue(relErr(dq, g.dq()) < 1e-10, "dq " + relErr(dq, g.dq()));
    assertTrue(relErr(dk, g.dk()) < 1e-10, "dk " + relErr(dk, g.dk()));
    assertTrue(relErr(dv, g.dv()) < 1e-10, "dv " + relErr(dv, g.dv()));
  }
}
