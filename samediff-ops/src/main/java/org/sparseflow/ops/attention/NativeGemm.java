package org.sparseflow.ops.attention;

import java.util.ArrayDeque;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.backend.Backends;

/**
 * Row-major single-precision or double-precision GEMM on raw native addresses (OpenBLAS {@code
 * cblas_?gemm}), plus bulk copies between native memory and Java arrays. The attention kernels
 * issue thousands of small GEMMs on sub-blocks of contiguous {@code [rows, headDim]} arrays;
 * calling BLAS directly avoids creating an ND4J op (and a view) per tile. Only used when the
 * backend is the ND4J CPU backend with OpenBLAS ({@link #available()}); otherwise {@link
 * DenseFallback} runs.
 */
final class NativeGemm {

  private static final NativeGemm FLOAT = new NativeGemm(false);
  private static final NativeGemm DOUBLE = new NativeGemm(true);

  private final boolean dbl;
  private final int elem;

  private NativeGemm(boolean dbl) {
    this.dbl = dbl;
    this.elem = dbl ? 8 : 4;
  }

  static NativeGemm of(DataType type) {
    return type == DataType.DOUBLE ? DOUBLE : FLOAT;
  }

  /** True on the ND4J CPU backend with OpenBLAS. */
  static boolean available() {
    return Backends.isCpuOpenBlas();
  }

  /** Native address of element 0 of {@code a} (a contiguous array or a view with an offset). */
  static long address(INDArray a) {
    return NativeAddress.of(a);
  }

  /** Address of element {@code index} counted from {@code base}. */
  long at(long base, long index) {
    return base + index * elem;
  }

  /** Sets n elements from {@code address} to zero (one memset, whatever they held). */
  void zero(long address, long n) {
    Pointer.memset(RawPointers.floatAt(0, address), 0, n * elem);
  }

  /** C[m x n] = alpha op(A) op(B) + beta C, all row-major with leading dimensions lda, ldb, ldc. */
  void gemm(
      boolean transA,
      boolean transB,
      int m,
      int n,
      int k,
      double alpha,
      long a,
      int lda,
      long b,
      int ldb,
      double beta,
      long c,
      int ldc) {
    int ta = transA ? openblas_nolapack.CblasTrans : openblas_nolapack.CblasNoTrans;
    int tb = transB ? openblas_nolapack.CblasTrans : openblas_nolapack.CblasNoTrans;
    if (dbl) {
      openblas_nolapack.cblas_dgemm(
          openblas_nolapack.CblasRowMajor,
          ta,
          tb,
          m,
          n,
          k,
          alpha,
          RawPointers.doubleAt(0, a),
          lda,
          RawPointers.doubleAt(1, b),
          ldb,
          beta,
          RawPointers.doubleAt(2, c),
          ldc);
    } else {
      openblas_nolapack.cblas_sgemm(
          openblas_nolapack.CblasRowMajor,
          ta,
          tb,
          m,
          n,
          k,
          (float) alpha,
          RawPointers.floatAt(0, a),
          lda,
          RawPointers.floatAt(1, b),
          ldb,
          (float) beta,
          RawPointers.floatAt(2, c),
          ldc);
    }
  }

  /** Copies n elements starting at {@code address} into a new double array. */
  double[] read(long address, int n) {
    double[] out = new double[n];
    if (dbl) {
      RawPointers.doubleAt(0, address).get(out, 0, n);
    } else {
      float[] f = new float[n];
      RawPointers.floatAt(0, address).get(f, 0, n);
      for (int i = 0; i < n; i++) {
        out[i] = f[i];
      }
    }
    return out;
  }

  /** Writes n elements of {@code data} to {@code address}. */
  void write(long address, double[] data, int n) {
    if (dbl) {
      RawPointers.doubleAt(0, address).put(data, 0, n);
    } else {
      float[] f = new float[n];
      for (int i = 0; i < n; i++) {
        f[i] = (float) data[i];
      }
      RawPointers.floatAt(0, address).put(f, 0, n);
    }
  }

  /** Copies n single-precision elements at {@code address} into {@code dst[0 .. n)}. */
  static void readFloats(long address, float[] dst, int n) {
    readFloats(address, dst, 0, n);
  }

  /** Copies n single-precision elements at {@code address} into {@code dst[off .. off + n)}. */
  static void readFloats(long address, float[] dst, int off, int n) {
    RawPointers.floatAt(0, address).get(dst, off, n);
  }

  /** Writes {@code src[0 .. n)} as n single-precision elements at {@code address}. */
  static void writeFloats(long address, float[] src, int n) {
    RawPointers.floatAt(0, address).put(src, 0, n);
  }

  /**
   * {@code out[i] = sum_x a[i d + x] b[i d + x]} in double, in order of x, over {@code rows} rows
   * of two contiguous single-precision [rows, d] arrays (read in chunks; no temporary array of the
   * full size, unlike an element-wise product followed by a row sum).
   */
  static double[] rowDotsFloat(long a, long b, int rows, int d) {
    double[] out = new double[rows];
    int chunk = Math.max(1, Math.min(rows, (1 << 14) / Math.max(1, d)));
    float[] fa = new float[chunk * d];
    float[] fb = new float[chunk * d];
    for (int r0 = 0; r0 < rows; r0 += chunk) {
      int n = Math.min(chunk, rows - r0);
      RawPointers.floatAt(0, a + 4L * r0 * d).get(fa, 0, n * d);
      RawPointers.floatAt(0, b + 4L * r0 * d).get(fb, 0, n * d);
      for (int i = 0; i < n; i++) {
        double s = 0;
        for (int x = i * d; x < (i + 1) * d; x++) {
          s += (double) fa[x] * fb[x];
        }
        out[r0 + i] = s;
      }
    }
    return out;
  }

  /** native[address .. address+n) += delta. */
  void addInto(long address, double[] delta, int n) {
    double[] cur = read(address, n);
    for (int i = 0; i < n; i++) {
      cur[i] += delta[i];
    }
    write(address, cur, n);
  }

  /** All elements of a contiguous 'c' array as doubles. */
  static double[] toDoubles(INDArray a) {
    INDArray c = a.ordering() == 'c' && !a.isView() ? a : a.dup('c');
    return of(c.dataType()).read(address(c), (int) c.length());
  }

  /** New 'c' array of the given type holding {@code data}. */
  static INDArray fromDoubles(double[] data, long[] shape, DataType type) {
    INDArray r = Nd4j.create(type, shape);
    of(type).write(address(r), data, data.length);
    return r;
  }

  /**
   * Native scratch buffer of this precision holding at least {@code n} elements; close it to hand
   * it back. Buffers are pooled per thread (the kernels take one or two per tile, thousands per
   * training step, and a fresh javacpp allocation costs a malloc, a memset and deallocator
   * bookkeeping each time). Nested use on one thread is fine: each open scratch is a different
   * buffer.
   */
  Scratch scratch(long n) {
    ArrayDeque<Scratch> free = pool.get();
    Scratch s = free.pollFirst();
    if (s == null || s.capacity < n) {
      if (s != null) {
        s.free();
      }
      s = new Scratch(Math.max(n, 1));
    }
    return s;
  }

  private final ThreadLocal<ArrayDeque<Scratch>> pool = ThreadLocal.withInitial(ArrayDeque::new);

  final class Scratch implements AutoCloseable {
    private final Pointer pointer;
    private final long base;
    private final long capacity;
    private double[] values =
        new double[0]; // read() results, reused: valid until the next read of this scratch
    private float[] floats = new float[0]; // float <-> double conversion buffer

    Scratch(long n) {
      pointer = dbl ? new DoublePointer(n) : new FloatPointer(n);
      base = pointer.address();
      capacity = n;
    }

    long at(long index) {
      return base + index * elem;
    }

    /**
     * The first n elements as doubles, in an array owned by this scratch (overwritten by the next
     * read).
     */
    double[] read(int n) {
      if (values.length < n) {
        values = new double[n];
      }
      if (dbl) {
        RawPointers.doubleAt(0, base).get(values, 0, n);
      } else {
        float[] f = floatBuffer(n);
        RawPointers.floatAt(0, base).get(f, 0, n);
        for (int i = 0; i < n; i++) {
          values[i] = f[i];
        }
      }
      return values;
    }

    void write(double[] data, int n) {
      if (dbl) {
        RawPointers.doubleAt(0, base).put(data, 0, n);
      } else {
        float[] f = floatBuffer(n);
        for (int i = 0; i < n; i++) {
          f[i] = (float) data[i];
        }
        RawPointers.floatAt(0, base).put(f, 0, n);
      }
    }

    /**
     * The first n elements of a single-precision scratch, in an array owned by this scratch (shared
     * with {@link #read}'s conversion buffer: valid until the next read or write).
     */
    float[] readFloats(int n) {
      float[] f = floatBuffer(n);
      RawPointers.floatAt(0, base).get(f, 0, n);
      return f;
    }

    /** Writes n elements of {@code data} to a single-precision scratch. */
    void writeFloats(float[] data, int n) {
      RawPointers.floatAt(0, base).put(data, 0, n);
    }

    private float[] floatBuffer(int n) {
      if (floats.length < n) {
        floats = new float[n];
      }
      return floats;
    }

    /** Hands the buffer back to this thread's pool. */
    @Override
    public void close() {
      pool.get().addFirst(this);
    }

    void free() {
      pointer.close();
    }
  }
}
