package org.sparseflow.ops.matmul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.ops.transforms.Transforms;

/**
 * The Java NaN probe against the abs-sum in double: lengths that are not a multiple of its chunk or
 * of the vector length, fp32 and fp64, offset views, and NaN / infinity at the last element.
 */
class NanProbeTest {

  @ParameterizedTest(name = "{0} n={1}")
  @CsvSource({
    "FLOAT,1",
    "FLOAT,17",
    "FLOAT,16389",
    "DOUBLE,3",
    "DOUBLE,8197",
    "FLOAT,1048583", // from 2^20 elements the probe runs in slices on the kernel threads
    "DOUBLE,1048579"
  })
  void absSumMatchesReferenceAndFindsNaNAndInfinity(DataType dt, int n) {
    Nd4j.getRandom().setSeed(n);
    INDArray big = Nd4j.randn(DataType.DOUBLE, 1, n + 7).castTo(dt);
    // an offset view: the probe must read exactly its n elements
    INDArray a = big.get(NDArrayIndex.point(0), NDArrayIndex.interval(3, 3 + n)).reshape(n);
    assertTrue(NanProbe.applies(a));
    double ref = Transforms.abs(a.castTo(DataType.DOUBLE)).sumNumber().doubleValue();
    assertEquals(ref, NanProbe.absSum(a), 1e-5 * Math.max(1, ref));
    big.putScalar(0, 2, Double.NaN);
    big.putScalar(0, 3 + n, Double.NaN);
    assertFalse(Double.isNaN(NanProbe.absSum(a)), "NaN next to the view is not read");
    a.putScalar(n - 1, Double.POSITIVE_INFINITY);
    assertEquals(Double.POSITIVE_INFINITY, NanProbe.absSum(a));
    a.putScalar(n - 1, Double.NaN);
    assertTrue(Double.isNaN(NanProbe.absSum(a)));
    assertTrue(Double.isNaN(BlockSparseKernels.probeSum(a)));
    a.putScalar(n - 1, 1.0);
    a.putScalar(n / 2, Double.NaN);
    assertTrue(Double.isNaN(NanProbe.absSum(a)), "NaN in the middle (another slice)");
  }

  /**
   * A parallel loop started inside a kernel worker's task runs serially there instead of waiting
   * for its own queued tasks (which only that busy worker could run).
   */
  @Test
  void nestedParallelLoopsFinish() {
    BlockSparseKernels.setThreads(2);
    try {
      AtomicInteger inner = new AtomicInteger();
      assertTimeoutPreemptively(
          Duration.ofSeconds(30),
          () ->
              BlockSparseKernels.parallelFor(
                  8,
                  (w, i) -> BlockSparseKernels.parallelFor(5, (w2, j) -> inner.incrementAndGet())));
      assertEquals(40, inner.get());
    } finally {
      BlockSparseKernels.setThreads(BlockSparseKernels.THREADS);
    }
  }
}
