package org.sparseflow.ops.matmul;

import org.bytedeco.openblas.global.openblas_nolapack;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.matmul.StridedBlas.Mat;

/**
 * The dense path of {@link SparseLinear} (density 1, or above the break-even density): one
 * multi-threaded BLAS GEMM per product on the operands as they are, whatever mix of row- and
 * column-major layouts they have, written straight into the output with beta = 0.
 *
 * <p>ND4J's {@code mmul} copies row-major ('c') operands to column-major before its GEMM: for x
 * [2048 x 1024] times W [1024 x 4096] that is 24 MB of copies and 6,000 extra page faults per call,
 * twice the CPU time of the same product on 'f' operands (docs/experiments/kernels.md). Here a
 * row-major product is handed to BLAS as its transpose (C^T = B^T A^T, all column-major), so no
 * layout costs a copy. Operands that BLAS cannot address (other strides, half precision, another
 * backend) go through ND4J's {@code mmul} as before.
 */
final class DenseGemm {

  private DenseGemm() {}

  /** True when {@link #gemm} calls BLAS directly on these arrays. */
  static boolean direct(INDArray... arrays) {
    if (!Backends.isCpuOpenBlas()) {
      return false;
    }
    DataType dt = arrays[0].dataType();
    if (dt != DataType.FLOAT && dt != DataType.DOUBLE) {
      return false;
    }
    for (INDArray a : arrays) {
      if (a.dataType() != dt || a.rank() != 2 || a.isEmpty() || !blasLayout(a)) {
        return false;
      }
    }
    return true;
  }

  private static boolean blasLayout(INDArray a) {
    long rs = a.stride(0);
    long cs = a.stride(1);
    long rows = a.size(0);
    long cols = a.size(1);
    return (rs == 1 && cs >= Math.max(1, rows)) || (cs == 1 && rs >= Math.max(1, cols));
  }

  /**
   * c = op(a) op(b), overwriting c (which may hold garbage: BLAS with beta = 0 never reads it),
   * where op transposes when asked. Shapes must agree; c is written in its own layout.
   */
  static void gemm(INDArray a, boolean transA, INDArray b, boolean transB, INDArray c) {
    int m = (int) c.size(0);
    int n = (int) c.size(1);
    int k = (int) (transA ? a.size(0) : a.size(1));
    if (direct(a, b, c)) {
      Mat ma = Mat.of(a);
      Mat mb = Mat.of(b);
      StridedBlas.gemm(m, n, k, transA ? ma.t() : ma, transB ? mb.t() : mb, Mat.of(c), 0.0);
      return;
    }
    c.assign((transA ? a.transpose() : a).mmul(transB ? b.transpose() : b));
  }

  /** A fresh row-major [rows x cols] output that {@link #gemm} overwrites whole. */
  static INDArray output(DataType dt, long rows, long cols) {
    return Nd4j.createUninitialized(dt, new long[] {rows, cols}, 'c');
  }

  /**
   * sums [cols] = the column sums of g [rows x cols]: one BLAS GEMV against a vector of ones
   * (multi-threaded, one pass over g) where BLAS applies, else ND4J's {@code sum(0)}.
   */
  static void columnSums(INDArray g, INDArray sums) {
    int rows = (int) g.size(0);
    int cols = (int) g.size(1);
    boolean contiguousSums =
        !sums.isView() && sums.length() == cols && sums.dataType() == g.dataType();
    if (!contiguousSums || !direct(g) || rows == 0) {
      sums.assign(g.sum(0).reshape(sums.shape()));
      return;
    }
    INDArray ones = ones(g.dataType(), rows);
    sums.assign(0.0); // BLAS scales the old content by beta = 0; never let garbage through
    Mat mg = Mat.of(g);
    // column-major BLAS sees a column-major g as A = g [rows x cols] (sums = A^T 1, Trans) and a
    // row-major g as A = g^T [cols x rows] with lda = its row stride (sums = A 1, NoTrans)
    boolean colMajor = mg.rs == 1 && mg.cs >= Math.max(1, rows);
    int trans = colMajor ? openblas_nolapack.CblasTrans : openblas_nolapack.CblasNoTrans;
    int bm = colMajor ? rows : cols;
    int bn = colMajor ? cols : rows;
    int lda = (int) Math.max(1, colMajor ? mg.cs : mg.rs);
    long ga = mg.address;
    long oa = NativeAddress.of(ones);
    long sa = NativeAddress.of(sums);
    if (g.dataType() == DataType.DOUBLE) {
      openblas_nolapack.cblas_dgemv(
          openblas_nolapack.CblasColMajor,
          trans,
          bm,
          bn,
          1.0,
          RawPointers.doubleAt(0, ga),
          lda,
          RawPointers.doubleAt(1, oa),
          1,
          0.0,
          RawPointers.doubleAt(2, sa),
          1);
    } else {
      openblas_nolapack.cblas_sgemv(
          openblas_nolapack.CblasColMajor,
          trans,
          bm,
          bn,
          1f,
          RawPointers.floatAt(0, ga),
          lda,
          RawPointers.floatAt(1, oa),
          1,
          0f,
          RawPointers.floatAt(2, sa),
          1);
    }
  }

  /**
   * y [rows x cols] += bias (length cols) on every row, in place: one BLAS rank-1 update (GER) with
   * the shared ones vector where BLAS applies (ND4J's row-vector broadcast took about 1.3 ms per
   * call on a [2048 x 512] float y in the packed training step), else {@code addiRowVector}.
   */
  static void addRowVector(INDArray y, INDArray bias) {
    int rows = (int) y.size(0);
    int cols = (int) y.size(1);
    boolean plainBias =
        bias.length() == cols
            && bias.dataType() == y.dataType()
            && Shape.hasDefaultStridesForShape(bias)
            && bias.elementWiseStride() == 1;
    if (!plainBias || !direct(y) || rows == 0) {
      y.addiRowVector(bias.reshape(1, cols).castTo(y.dataType()));
      return;
    }
    Mat my = Mat.of(y);
    INDArray ones = ones(y.dataType(), rows);
    // column-major BLAS: a row-major y is A = y^T [cols x rows] (A += bias 1^T), a column-major y
    // is A = y [rows x cols] (A += 1 bias^T)
    boolean rowMajor = my.cs == 1;
    int m = rowMajor ? cols : rows;
    int n = rowMajor ? rows : cols;
    int lda = (int) Math.max(1, rowMajor ? my.rs : my.cs);
    long xa = NativeAddress.of(rowMajor ? bias : ones);
    long ya = NativeAddress.of(rowMajor ? ones : bias);
    if (y.dataType() == DataType.DOUBLE) {
      openblas_nolapack.cblas_dger(
          openblas_nolapack.CblasColMajor,
          m,
          n,
          1.0,
          RawPointers.doubleAt(0, xa),
          1,
          RawPointers.doubleAt(1, ya),
          1,
          RawPointers.doubleAt(2, my.address),
          lda);
    } else {
      openblas_nolapack.cblas_sger(
          openblas_nolapack.CblasColMajor,
          m,
          n,
          1f,
          RawPointers.floatAt(0, xa),
          1,
          RawPointers.floatAt(1, ya),
          1,
          RawPointers.floatAt(2, my.address),
          lda);
    }
  }

  private static final INDArray[] ONES = new INDArray[2]; // [float, double], grown as needed

  /**
   * A shared vector of at least n ones, outside any workspace, never written: the BLAS GEMV of
   * {@link #columnSums} and the GER of {@link #addRowVector} read its first n entries (a fresh ones
   * vector per call cost as much as the GEMV itself in a profile of the packed training step).
   */
  private static INDArray ones(DataType dt, int n) {
    int k = dt == DataType.DOUBLE ? 1 : 0;
    synchronized (ONES) {
      INDArray o = ONES[k];
      if (o == null || o.length() < n) {
        try (MemoryWorkspace ws = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
          o = Nd4j.ones(dt, Math.max(n, 4096));
        }
        ONES[k] = o;
      }
      return o;
    }
  }
}
