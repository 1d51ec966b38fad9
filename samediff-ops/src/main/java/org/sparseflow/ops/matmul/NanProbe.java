package org.sparseflow.ops.matmul;

import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.util.function.IntPredicate;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;

/**
 * The sum of |a| over a contiguous fp32 or fp64 array, computed in Java on the kernels' own threads
 * (NaN when a holds a NaN, infinite when it holds an infinity): the cheap NaN probe of the kernels'
 * inputs and outputs.
 *
 * <p>It replaced a BLAS {@code ?asum}: a multi-threaded OpenBLAS call leaves OpenBLAS's worker
 * thread spinning in {@code sched_yield} for about 100 ms afterwards (measured: 80-90 ms of that
 * thread's CPU time, mostly system time, in the 200 ms after one {@code sasum} of 2M floats), and
 * on a 2-core host that thread then competes with the block kernel's two threads for the whole
 * kernel (docs/experiments/kernels.md).
 */
final class NanProbe {

  /** Elements per chunk: copied from native memory into a Java array, then summed. */
  private static final int CHUNK = 8192;

  /** Arrays at least this long are summed on the kernel threads. */
  private static final int PARALLEL_MIN = 1 << 20;

  private static final ThreadLocal<float[]> FLOATS =
      ThreadLocal.withInitial(() -> new float[CHUNK]);
  private static final ThreadLocal<double[]> DOUBLES =
      ThreadLocal.withInitial(() -> new double[CHUNK]);

  private NanProbe() {}

  /** True when {@link #absSum} reads a directly (contiguous FLOAT or DOUBLE). */
  static boolean applies(INDArray a) {
    DataType t = a.dataType();
    return (t == DataType.FLOAT || t == DataType.DOUBLE)
        && a.length() > 0
        && a.length() < Integer.MAX_VALUE
        && Shape.hasDefaultStridesForShape(a)
        && a.elementWiseStride() == 1;
  }

  /** Sum of |a| (see class comment); a must satisfy {@link #applies}. */
  static double absSum(INDArray a) {
    int n = (int) a.length();
    long address = NativeAddress.of(a);
    boolean isDouble = a.dataType() == DataType.DOUBLE;
    if (n < PARALLEL_MIN) {
      return isDouble ? sumDoubles(address, 0, n) : sumFloats(address, 0, n);
    }
    // memory-bound (about 3 ms for 8M floats on one core): slices on the kernel threads. Only
    // NaN-ness is read from the sum, so the slices' order does not matter.
    int slices = 4 * BlockSparseKernels.threads();
    double[] parts = new double[slices];
    BlockSparseKernels.parallelFor(
        slices,
        (worker, s) -> {
          int from = (int) ((long) s * n / slices);
          int len = (int) ((long) (s + 1) * n / slices) - from;
          parts[s] = isDouble ? sumDoubles(address, from, len) : sumFloats(address, from, len);
        });
    double sum = 0;
    for (double p : parts) {
      sum += p;
    }
    return sum;
  }

  private static double sumFloats(long address, int from, int len) {
    FloatBuffer src = RawPointers.floatBuffer(address + 4L * from, len);
    float[] buf = FLOATS.get();
    double s = 0;
    for (int i = 0; i < len; i += CHUNK) {
      int m = Math.min(CHUNK, len - i);
      src.get(i, buf, 0, m);
      s += VectorSupport.AVAILABLE ? VectorMicroKernel.absSum(buf, m) : scalarAbsSum(buf, m);
    }
    return s;
  }

  private static double sumDoubles(long address, int from, int len) {
    DoubleBuffer src = RawPointers.doubleBuffer(address + 8L * from, len);
    double[] buf = DOUBLES.get();
    double s0 = 0;
    double s1 = 0;
    for (int i = 0; i < len; i += CHUNK) {
      int m = Math.min(CHUNK, len - i);
      src.get(i, buf, 0, m);
      int j = 0;
      for (; j + 1 < m; j += 2) {
        s0 += Math.abs(buf[j]);
        s1 += Math.abs(buf[j + 1]);
      }
      for (; j < m; j++) {
        s0 += Math.abs(buf[j]);
      }
    }
    return s0 + s1;
  }

  private static double scalarAbsSum(float[] a, int n) {
    float s0 = 0;
    float s1 = 0;
    float s2 = 0;
    float s3 = 0;
    int i = 0;
    for (; i + 3 < n; i += 4) {
      s0 += Math.abs(a[i]);
      s1 += Math.abs(a[i + 1]);
      s2 += Math.abs(a[i + 2]);
      s3 += Math.abs(a[i + 3]);
    }
    for (; i < n; i++) {
      s0 += Math.abs(a[i]);
    }
    return (double) s0 + s1 + s2 + s3;
  }

  /**
   * Whether row 0 or column 0 of a non-empty rank-2 y holds a NaN, read in Java (an ND4J reduction
   * over a strided column view cost 10-15 ms here, more than the scan it replaces).
   */
  static boolean firstRowOrColumnHasNaN(INDArray y) {
    long rows = y.size(0), cols = y.size(1), rs = y.stride(0), cs = y.stride(1);
    long span = (rows - 1) * rs + (cols - 1) * cs + 1;
    DataType t = y.dataType();
    if (span > Integer.MAX_VALUE
        || rs < 0
        || cs < 0
        || (t != DataType.FLOAT && t != DataType.DOUBLE)) {
      return Double.isNaN(y.getColumn(0).sumNumber().doubleValue())
          || Double.isNaN(y.getRow(0).sumNumber().doubleValue());
    }
    long at = NativeAddress.of(y);
    IntPredicate nanAt;
    if (t == DataType.FLOAT) {
      FloatBuffer f = RawPointers.floatBuffer(at, span);
      nanAt = k -> Float.isNaN(f.get(k));
    } else {
      DoubleBuffer dbl = RawPointers.doubleBuffer(at, span);
      nanAt = k -> Double.isNaN(dbl.get(k));
    }
    for (long i = 0; i < rows; i++) {
      if (nanAt.test((int) (i * rs))) {
        return true;
      }
    }
    for (long j = 0; j < cols; j++) {
      if (nanAt.test((int) (j * cs))) {
        return true;
      }
    }
    return false;
  }
}
