package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.ops.attention.AttentionTestUtil.rand;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The fp32 forward (softmax) and backward with the Vector API element-wise steps ({@link
 * AttentionVectorOps}) equal the dense double-precision reference ({@link DenseFallback} on fp64
 * copies of the inputs): block sizes 16, 32, 64 (and 8, below the AVX-512 lane count, which keeps
 * the scalar loop), even and odd head dims, local + strided patterns, one thread and the parallel
 * schedule. The tests run with {@code --add-modules jdk.incubator.vector} (the surefire argLine).
 */
class AttentionVectorOpsTest {

  @AfterEach
  void restoreThreads() {
    AttentionThreads.setSerial(false);
  }

  static List<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    int[][] shapes = {{16, 64}, {32, 33}, {64, 64}, {64, 7}, {8, 16}};
    for (int[] s : shapes) {
      for (boolean serial : new boolean[] {true, false}) {
        out.add(Arguments.of(s[0], s[1], serial));
      }
    }
    return out;
  }

  @ParameterizedTest(name = "block={0} headDim={1} serial={2}")
  @MethodSource("cases")
  void fp32BackwardMatchesDoubleDenseReference(int block, int headDim, boolean serial) {
    assertTrue(VectorSupport.AVAILABLE, "tests run with --add-modules jdk.incubator.vector");
    assertEquals(
        block % VectorSupport.lanes() == 0,
        AttentionVectorOps.applies(block),
        "vector step applies exactly to blocks that are a multiple of the lanes");
    AttentionThreads.setSerial(serial);
    int t = Math.max(8 * block, 256);
    int heads = 2;
    String pattern = "local:" + (2 * block) + "+strided:" + (2 * block);
    BlockLayout layout = AttentionPattern.parse(pattern).layout(t, block, heads);
    double scale = SparseAttention.defaultScale(headDim);
    INDArray q = rand(61, DataType.FLOAT, 1, heads, t, headDim);
    INDArray k = rand(62, DataType.FLOAT, 1, heads, t, headDim);
    INDArray v = rand(63, DataType.FLOAT, 1, heads, t, headDim);
    INDArray dOut = rand(64, DataType.FLOAT, 1, heads, t, headDim);
    // the parallel case really runs the parallel schedule
    assertTrue(serial || 2L * heads * t * headDim * t >= AttentionThreads.SERIAL_WORK);
    SparseAttention.Result r = SparseAttention.forward(q, k, v, layout, scale);
    SparseAttention.Grads g = SparseAttention.backward(q, k, v, r, dOut, layout, scale);

    INDArray qd = q.castTo(DataType.DOUBLE);
    INDArray kd = k.castTo(DataType.DOUBLE);
    INDArray vd = v.castTo(DataType.DOUBLE);
    INDArray dOutD = dOut.castTo(DataType.DOUBLE);
    INDArray outD = Nd4j.create(DataType.DOUBLE, 1, heads, t, headDim);
    INDArray lseD = Nd4j.create(DataType.DOUBLE, 1, heads, t);
    DenseFallback.forward(qd, kd, vd, layout, scale, outD, lseD);
    INDArray dq = Nd4j.create(DataType.DOUBLE, 1, heads, t, headDim);
    INDArray dk = Nd4j.create(DataType.DOUBLE, 1, heads, t, headDim);
    INDArray dv = Nd4j.create(DataType.DOUBLE, 1, heads, t, headDim);
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
}
