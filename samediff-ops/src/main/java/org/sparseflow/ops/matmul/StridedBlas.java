package org.sparseflow.ops.matmul;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;

/**
 * BLAS calls on strided matrices in native memory ({@link Mat}): GEMM for any mix of row- and
 * column-major operands (OpenBLAS takes one of the two layouts per operand, so the call is mapped
 * to the column-major form it accepts), and zero-fill and absolute-sum helpers on such matrices.
 */
final class StridedBlas {
  private StridedBlas() {}

  /**
   * A strided matrix in native memory: element (r, c) at address + (off + r*rs + c*cs) *
   * elementSize.
   */
  static final class Mat {
    final long address;
    final long off;
    final long rs;
    final long cs;
    final boolean isDouble;

    Mat(long address, long off, long rs, long cs, boolean isDouble) {
      this.address = address;
      this.off = off;
      this.rs = rs;
      this.cs = cs;
      this.isDouble = isDouble;
    }

    static Mat of(INDArray a) {
      return new Mat(
          NativeAddress.of(a), 0, a.stride(0), a.stride(1), a.dataType() == DataType.DOUBLE);
    }

    Mat sub(long r0, long c0) {
      return new Mat(address, off + r0 * rs + c0 * cs, rs, cs, isDouble);
    }

    Mat t() {
      return new Mat(address, off, cs, rs, isDouble);
    }
  }

  private static boolean colMajor(Mat a, int rows, int cols) {
    return a.rs == 1 && a.cs >= Math.max(1, rows);
  }

  private static boolean rowMajor(Mat a, int rows, int cols) {
    return a.cs == 1 && a.rs >= Math.max(1, cols);
  }

  /** C[m x n] = A[m x k] B[k x n] + beta C, for any mix of row- and column-major operands. */
  static void gemm(int m, int n, int k, Mat a, Mat b, Mat c, double beta) {
    gemm(m, n, k, 1.0, a, b, c, beta);
  }

  /** C[m x n] = alpha A[m x k] B[k x n] + beta C. */
  static void gemm(int m, int n, int k, double alpha, Mat a, Mat b, Mat c, double beta) {
    if (colMajor(c, m, n)) {
      colMajorGemm(m, n, k, alpha, a, b, c, beta);
    } else if (rowMajor(c, m, n)) {
      colMajorGemm(n, m, k, alpha, b.t(), a.t(), c.t(), beta); // C^T = B^T A^T
    } else {
      throw new IllegalStateException(
          "output panel is not BLAS compatible: rs=" + c.rs + " cs=" + c.cs);
    }
  }

  /**
   * Sets the rows x cols panel c to zero whatever it held (NaN included), one memset per contiguous
   * line. (A BLAS call with alpha = beta = 0 does not do this: OpenBLAS's small-matrix kernels
   * compute 0 * C and so keep a NaN that C held.)
   */
  static void zero(Mat c, int rows, int cols) {
    boolean col = colMajor(c, rows, cols);
    if (!col && !rowMajor(c, rows, cols)) {
      throw new IllegalStateException("panel is not BLAS compatible: rs=" + c.rs + " cs=" + c.cs);
    }
    long lines = col ? cols : rows, len = col ? rows : cols, ld = col ? c.cs : c.rs;
    long elem = c.isDouble ? 8 : 4;
    if (lines == 1 || ld == len) {
      Pointer.memset(bytesAt(c.address + c.off * elem), 0, lines * len * elem);
      return;
    }
    for (long l = 0; l < lines; l++) {
      Pointer.memset(bytesAt(c.address + (c.off + l * ld) * elem), 0, len * elem);
    }
  }

  /** A byte pointer re-aimed at raw addresses (one per thread). */
  private static final class Bytes extends BytePointer {
    Bytes at(long addr) {
      address = addr;
      return this;
    }
  }

  private static final ThreadLocal<Bytes> BYTES = ThreadLocal.withInitial(Bytes::new);

  private static BytePointer bytesAt(long address) {
    return BYTES.get().at(address);
  }

  /**
   * Sum of |c| over a rows x cols panel (NaN if any element is NaN): one ?asum per contiguous
   * column or row.
   */
  static double asum(Mat c, int rows, int cols) {
    boolean col = colMajor(c, rows, cols);
    if (!col && !rowMajor(c, rows, cols)) {
      throw new IllegalStateException("panel is not BLAS compatible: rs=" + c.rs + " cs=" + c.cs);
    }
    long lines = col ? cols : rows, len = col ? rows : cols, ld = col ? c.cs : c.rs;
    if (lines == 1 || ld == len) { // contiguous: one call
      return c.isDouble
          ? openblas_nolapack.cblas_dasum((int) (lines * len), doubleAt(c, 0), 1)
          : openblas_nolapack.cblas_sasum((int) (lines * len), floatAt(c, 0), 1);
    }
    double s = 0;
    if (lines > len) {
      // many short lines (a row-major panel b columns wide): len strided calls across the lines
      // instead
      for (long j = 0; j < len; j++) {
        Mat across = col ? c.sub(j, 0) : c.sub(0, j);
        s +=
            c.isDouble
                ? openblas_nolapack.cblas_dasum((int) lines, doubleAt(across, 0), (int) ld)
                : openblas_nolapack.cblas_sasum((int) lines, floatAt(across, 0), (int) ld);
      }
      return s;
    }
    for (long l = 0; l < lines; l++) {
      Mat line = col ? c.sub(0, l) : c.sub(l, 0);
      s +=
          c.isDouble
              ? openblas_nolapack.cblas_dasum((int) len, doubleAt(line, 0), 1)
              : openblas_nolapack.cblas_sasum((int) len, floatAt(line, 0), 1);
    }
    return s;
  }

  /**
   * The CBLAS transpose flag of panel {@code p} [rows x cols] in a column-major GEMM: no transpose
   * if it is column-major, transpose if row-major; {@code name} names it in the error otherwise.
   */
  private static int blasTrans(String name, Mat p, int rows, int cols) {
    if (colMajor(p, rows, cols)) {
      return openblas_nolapack.CblasNoTrans;
    }
    if (rowMajor(p, rows, cols)) {
      return openblas_nolapack.CblasTrans;
    }
    throw new IllegalStateException(
        name + " panel is not BLAS compatible: rs=" + p.rs + " cs=" + p.cs);
  }

  /** The leading dimension of panel {@code p} under CBLAS transpose flag {@code trans}. */
  private static int leadingDim(Mat p, int trans) {
    return (int) (trans == openblas_nolapack.CblasNoTrans ? p.cs : p.rs);
  }

  private static void colMajorGemm(
      int m, int n, int k, double alpha, Mat a, Mat b, Mat c, double beta) {
    int transA = blasTrans("A", a, m, k);
    int lda = leadingDim(a, transA);
    int transB = blasTrans("B", b, k, n);
    int ldb = leadingDim(b, transB);
    int ldc = (int) Math.max(c.cs, Math.max(1, m));
    if (c.isDouble) {
      openblas_nolapack.cblas_dgemm(
          openblas_nolapack.CblasColMajor,
          transA,
          transB,
          m,
          n,
          k,
          alpha,
          doubleAt(a, 0),
          lda,
          doubleAt(b, 1),
          ldb,
          beta,
          doubleAt(c, 2),
          ldc);
    } else {
      openblas_nolapack.cblas_sgemm(
          openblas_nolapack.CblasColMajor,
          transA,
          transB,
          m,
          n,
          k,
          (float) alpha,
          floatAt(a, 0),
          lda,
          floatAt(b, 1),
          ldb,
          (float) beta,
          floatAt(c, 2),
          ldc);
    }
  }

  private static FloatPointer floatAt(Mat a, int slot) {
    return RawPointers.floatAt(slot, a.address + a.off * 4L);
  }

  private static DoublePointer doubleAt(Mat a, int slot) {
    return RawPointers.doubleAt(slot, a.address + a.off * 8L);
  }
}
