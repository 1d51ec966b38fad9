package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.ops.attention.AttentionTestUtil.rand;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The fp32 kernels with the Vector API steps ({@link AttentionVectorOps}: forward softmax and the
 * backward's element-wise step; {@link StridedBlocks}: the strided keys per query block, and {@link
 * StridedVectorKernel}, their head-wide form beside native-GEMM tiles (block 8)) equal the dense
 * double-precision reference ({@link DenseFallback} on fp64 copies of the inputs): block sizes 16,
 * 32, 64 (and 8, below the AVX-512 lane count, which keeps the scalar loop), even and odd head dims
 * (7 is narrower than a vector: the scalar tail only), strides that divide T and ones that leave
 * residue classes of unequal length, batch 2, one thread and the parallel schedule, which also
 * agree bit for bit. The tests run with {@code --add-modules jdk.incubator.vector} (the surefire
 * argLine).
 */
class AttentionVectorOpsTest {

  @AfterEach
  void restoreThreads() {
    AttentionThreads.setSerial(false);
  }

  static List<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    int[][] shapes = {{16, 64}, {32, 33}, {64, 64}, {64, 7}, {8, 16}, {16, 48}};
    for (int[] s : shapes) {
      out.add(Arguments.of(s[0], s[1], "local:" + (2 * s[0]) + "+strided:" + (2 * s[0])));
      out.add(Arguments.of(s[0], s[1], "local:" + s[0] + "+strided:" + (3 * s[0] - 1)));
    }
    out.add(Arguments.of(16, 64, "local:32+strided:24+strided:40"));
    out.add(Arguments.of(16, 64, "global:2+local:32+strided:48"));
    return out;
  }

  @ParameterizedTest(name = "block={0} headDim={1} pattern={2}")
  @MethodSource("cases")
  void fp32MatchesDoubleDenseReferenceWithOneAndTwoThreads(int block, int headDim, String pattern) {
    assertTrue(VectorSupport.AVAILABLE, "tests run with --add-modules jdk.incubator.vector");
    assertEquals(
        block % VectorSupport.lanes() == 0,
        AttentionVectorOps.applies(block),
        "vector step applies exactly to blocks that are a multiple of the lanes");
    int t = Math.max(8 * block, 256);
    int batch = 2;
    int heads = 2;
    BlockLayout layout = AttentionPattern.parse(pattern).layout(t, block, heads);
    double scale = SparseAttention.defaultScale(headDim);
    INDArray q = rand(61, DataType.FLOAT, batch, heads, t, headDim);
    INDArray k = rand(62, DataType.FLOAT, batch, heads, t, headDim);
    INDArray v = rand(63, DataType.FLOAT, batch, heads, t, headDim);
    INDArray dOut = rand(64, DataType.FLOAT, batch, heads, t, headDim);
    // the parallel case really runs the parallel schedule
    assertTrue(2L * batch * heads * t * headDim * t >= AttentionThreads.SERIAL_WORK);
    AttentionThreads.setSerial(true);
    SparseAttention.Result r1 = SparseAttention.forward(q, k, v, layout, scale);
    SparseAttention.Grads g1 = SparseAttention.backward(q, k, v, r1, dOut, layout, scale);
    AttentionThreads.setSerial(false);
    SparseAttention.Result r = SparseAttention.forward(q, k, v, layout, scale);
    SparseAttention.Grads g = SparseAttention.backward(q, k, v, r, dOut, layout, scale);
    assertArrayEquals(r1.out().data().asFloat(), r.out().data().asFloat(), "out 1 vs 2 threads");
    assertArrayEquals(g1.dq().data().asFloat(), g.dq().data().asFloat(), "dq 1 vs 2 threads");
    assertArrayEquals(g1.dk().data().asFloat(), g.dk().data().asFloat(), "dk 1 vs 2 threads");
    assertArrayEquals(g1.dv().data().asFloat(), g.dv().data().asFloat(), "dv 1 vs 2 threads");

    INDArray qd = q.castTo(DataType.DOUBLE);
    INDArray kd = k.castTo(DataType.DOUBLE);
    INDArray vd = v.castTo(DataType.DOUBLE);
    INDArray dOutD = dOut.castTo(DataType.DOUBLE);
    INDArray outD = Nd4j.create(DataType.DOUBLE, batch, heads, t, headDim);
    INDArray lseD = Nd4j.create(DataType.DOUBLE, batch, heads, t);
    DenseFallback.forward(qd, kd, vd, layout, scale, outD, lseD);
    INDArray dq = Nd4j.create(DataType.DOUBLE, batch, heads, t, headDim);
    INDArray dk = Nd4j.create(DataType.DOUBLE, batch, heads, t, headDim);
    INDArray dv = Nd4j.create(DataType.DOUBLE, batch, heads, t, headDim);
    DenseFallback.backward(qd, kd, vd, outD, dOutD, layout, scale, dq, dk, dv);

    double tol = 2e-5;
    assertTrue(AttentionTestUtil.relErr(r.out(), outD) < tol, "out");
    assertTrue(AttentionTestUtil.relErr(r.lse(), lseD) < tol, "lse");
    assertTrue(
        AttentionTestUtil.relErr(g.dq(), dq) < tol, "dq " + AttentionTestUtil.relErr(g.dq(), dq));
    assertTrue(
        AttentionTestUtil.relErr(g.dk(), dk) < tol, "dk " + AttentionTestUtil.relErr(g.dk(), dk));
    assertTrue(
        AttentionTestUtil.relErr(g.dv(), dv) < tol, "dv " + AttentionTestUtil.relErr(g.dv(), dv));
  }

  /** A NaN reaching the vector paths is reported by name before any kernel runs. */
  @Test
  void nanInTheGradientIsReportedByName() {
    int t = 128;
    BlockLayout layout = AttentionPattern.parse("local:32+strided:32").layout(t, 16, 1);
    INDArray q = rand(71, DataType.FLOAT, 1, 1, t, 32);
    SparseAttention.Result r = SparseAttention.forward(q, q, q, layout, 0.25);
    INDArray dOut = rand(72, DataType.FLOAT, 1, 1, t, 32);
    dOut.putScalar(new long[] {0, 0, 77, 5}, Float.NaN);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparseAttention.backward(q, q, q, r, dOut, layout, 0.25));
    assertTrue(e.getMessage().startsWith("dOut contains NaN"), e.getMessage());
  }
}
