package org.sparseflow.ops.packed;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.sparseflow.ops.matmul.PackedPanelGemm;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Packed storage on the register-blocked float kernels ({@link PackedPanelGemm}): forward, dx and
 * dW of the kept blocks against a double-precision dense reference, for every block size, ragged
 * token counts, non-contiguous activations and 1 or 2 threads; and dW bit-identical for any thread
 * count.
 */
class PackedTiledKernelsTest {

  @AfterEach
  void restoreThreads() {
    BlockSparseKernels.setThreads(BlockSparseKernels.THREADS);
  }

  static Stream<Arguments> cases() {
    return Stream.of(
        Arguments.of(16, 1, 37, 0.3),
        Arguments.of(16, 2, 200, 0.1),
        Arguments.of(32, 1, 64, 0.5),
        Arguments.of(32, 2, 131, 0.25),
        Arguments.of(64, 1, 49, 0.5),
        Arguments.of(64, 2, 300, 0.2));
  }

  @ParameterizedTest(name = "block {0}, {1} thread(s), {2} rows, density {3}")
  @MethodSource("cases")
  void matchesTheDenseReferenceInDouble(int b, int threads, int n, double density) {
    BlockSparseKernels.setThreads(threads);
    int rows = 4 * b;
    int cols = 3 * b;
    BlockMask m = (BlockMask) PatternSpec.block(b).random(rows, cols, density, b + n);
    PackedLayout l = PackedLayout.of(m);
    Nd4j.getRandom().setSeed(n);
    INDArray w = Nd4j.randn(DataType.FLOAT, rows, cols).muli(m.toDense(DataType.FLOAT));
    // non-contiguous activations: a column window of a wider array, and a transposed view
    INDArray xWide = Nd4j.randn(DataType.FLOAT, n, rows + 5);
    INDArray x = xWide.get(NDArrayIndex.all(), NDArrayIndex.interval(2, 2 + rows));
    INDArray dy = Nd4j.randn(DataType.FLOAT, cols, n).transpose();
    assertTrue(PackedPanelGemm.applies(b, x, dy), "the tiled kernels serve this case");
    INDArray packed = PackedBlockLinear.pack(w, l);

    INDArray y = PackedBlockLinear.forward(x, packed, null, l);
    INDArray wd = w.castTo(DataType.DOUBLE);
    INDArray xd = x.castTo(DataType.DOUBLE);
    INDArray dyd = dy.castTo(DataType.DOUBLE);
    assertClose(xd.mmul(wd), y, "y");

    INDArray dp = Nd4j.create(DataType.FLOAT, l.packedShape());
    INDArray dx = PackedBlockLinear.backward(x, packed, l, dy, dp, true);
    assertClose(dyd.mmul(wd.transpose()), dx, "dx");
    INDArray dwRef = xd.transpose().mmul(dyd).muli(m.toDense(DataType.DOUBLE));
    assertClose(PackedBlockLinear.pack(dwRef, l), dp, "dW");
  }

  @Test
  void weightGradientIsBitIdenticalForAnyThreadCount() {
    BlockMask m = (BlockMask) PatternSpec.block(16).random(64, 96, 0.4, 9);
    PackedLayout l = PackedLayout.of(m);
    Nd4j.getRandom().setSeed(3);
    INDArray x = Nd4j.randn(DataType.FLOAT, 900, 64);
    INDArray dy = Nd4j.randn(DataType.FLOAT, 900, 96);
    INDArray packed = Nd4j.randn(DataType.FLOAT, l.packedShape());
    INDArray ref = null;
    for (int rep = 0; rep < 4; rep++) {
      BlockSparseKernels.setThreads(rep % 2 == 0 ? 1 : 2);
      INDArray dp = Nd4j.create(DataType.FLOAT, l.packedShape());
      PackedBlockLinear.backward(x, packed, l, dy, dp, false);
      if (ref == null) {
        ref = dp;
      } else {
        assertEquals(ref, dp, "dW, repetition " + rep);
      }
    }
  }

  private static void assertClose(INDArray expected, INDArray actual, String what) {
    INDArray diff = expected.sub(actual.castTo(DataType.DOUBLE));
    double err = diff.norm2Number().doubleValue();
    double scale = Math.max(1.0, expected.norm2Number().doubleValue());
    assertTrue(err / scale < 1e-5, what + ": relative error " + err / scale);
  }
}
