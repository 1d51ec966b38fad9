package org.sparseflow.layers.nn;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.matmul.SparseLinear;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * The one place where the DL4J layers meet the samediff-ops kernels and mask factories. Masks are
 * carried by the layers as dense 0/1 params ("M"); W keeps exact zeros outside the mask.
 *
 * <p>Linear: y = x (W o M) + b, dW = (x^T dy) o M (dense x^T dy when requested), dx = dy (W o M)^T,
 * computed by {@link SparseLinear} (block-sparse kernels for block masks).
 */
final class SparseKernels {
  private SparseKernels() {}

  static final String WEIGHT_PATTERN_ALLOWED =
      "unstructured, block8, block16, block32, block64, n:m with 1 <= n <= m <= 64 (e.g. 2:4)";

  static PatternSpec parsePattern(String field, String text) {
    if (text == null) {
      throw new IllegalArgumentException(
          field + " = null is not a weight sparsity pattern; allowed: " + WEIGHT_PATTERN_ALLOWED);
    }
    try {
      return PatternSpec.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          field
              + " = '"
              + text
              + "' is not a weight sparsity pattern ("
              + e.getMessage()
              + "); allowed: "
              + WEIGHT_PATTERN_ALLOWED,
          e);
    }
  }

  static AttentionPattern parseAttentionPattern(String field, String text) {
    try {
      return AttentionPattern.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          field
              + " = '"
              + text
              + "' is not an attention pattern ("
              + e.getMessage()
              + "); allowed: components dense | local:W | strided:S | fixed:L[:C] | global:G |"
              + " random:R[:seed=N] joined by '+', e.g. 'local:64+strided:64'",
          e);
    }
  }

  static void checkDensity(String field, double density) {
    if (!(density > 0.0 && density <= 1.0)) {
      throw new IllegalArgumentException(
          field + " = " + density + " is out of range; allowed: (0, 1]");
    }
  }

  /** Throws if a [rows, cols] weight cannot carry the pattern. */
  static void checkShape(
      String layer, PatternSpec p, long rows, long cols, String rowsName, String colsName) {
    p.pattern().checkShape(LayerValidation.where(layer), rows, cols, rowsName, colsName);
  }

  /**
   * A seeded random 0/1 mask with the pattern's structure (PatternSpec.random), as a dense array.
   */
  static INDArray randomMask(
      PatternSpec p, long rows, long cols, double density, long seed, DataType dt) {
    return p.random(rows, cols, density, seed).toDense(dt);
  }

  /**
   * Builds the structured mask of a dense 0/1 array, outside any workspace (it is cached by the
   * layer).
   */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  static SparseMask maskOf(PatternSpec p, INDArray mask01, DataType dt) {
    try (MemoryWorkspace ignored = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      SparseMask m = p.fromDense(mask01);
      m.cachedDense(dt); // prime the dense cache outside workspaces
      return m;
    }
  }

  /** y = x (W o M) + b; mask may be null (dense), bias may be null. */
  static INDArray linearForward(INDArray x, INDArray w, INDArray bias, SparseMask mask) {
    if (mask == null) {
      INDArray y = x.mmul(w);
      if (bias != null) {
        y.addiRowVector(bias);
      }
      return y;
    }
    // row-major output: DL4J hands the epsilon back row-major (TimeDistributed, RnnOutputLayer),
    // and element-wise
    // activation backprop on mixed orders takes ND4J's slow path (measured 3x on GELU); the kernels
    // write either
    INDArray y = Nd4j.createUninitialized(w.dataType(), new long[] {x.size(0), w.size(1)}, 'c');
    SparseLinear.forwardInto(x, w, bias, mask, y);
    return y;
  }

  private static final ThreadLocal<double[]> SCRATCH = ThreadLocal.withInitial(() -> new double[0]);
  private static final ThreadLocal<float[]> FLOAT_SCRATCH =
      ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Sums over the rows of a [N, n] float or double array in any order and strides: n column sums.
   */
  static double[] columnSums(INDArray a) {
    int rows = (int) a.size(0), cols = (int) a.size(1);
    double[] out = new double[cols];
    if (a.dataType() != DataType.FLOAT && a.dataType() != DataType.DOUBLE) {
      return a.castTo(DataType.DOUBLE).sum(0).toDoubleVector();
    }
    long rs = a.stride(0), cs = a.stride(1);
    int span = (int) (1 + (rows - 1) * rs + (cols - 1) * cs);
    long addr = NativeAddress.of(a);
    double[] v = SCRATCH.get();
    if (v.length < span) {
      v = new double[span]; // kept per thread: fresh MB-sized arrays per call are G1 humongous
      // allocations
      SCRATCH.set(v);
    }
    if (a.dataType() == DataType.DOUBLE) {
      RawPointers.doubleAt(0, addr).get(v, 0, span);
    } else {
      float[] f = FLOAT_SCRATCH.get();
      if (f.length < span) {
        f = new float[span];
        FLOAT_SCRATCH.set(f);
      }
      RawPointers.floatAt(0, addr).get(f, 0, span);
      for (int i = 0; i < span; i++) {
        v[i] = f[i];
      }
    }
    if (cs == 1) {
      for (int r = 0; r < rows; r++) {
        int o = (int) (r * rs);
        for (int c = 0; c < cols; c++) {
          out[c] += v[o + c];
        }
      }
    } else {
      for (int c = 0; c < cols; c++) {
        int o = (int) (c * cs);
        double s = 0;
        for (int r = 0; r < rows; r++) {
          s += v[o + (int) (r * rs)];
        }
        out[c] = s;
      }
    }
    return out;
  }

  /**
   * Backward of {@link #linearForward}: writes dW o M into dWOut, the bias gradient into dbOut (if
   * non-null) and, if denseDWOut is non-null, the dense x^T dy into it (for RigL-style regrowth);
   * returns dx.
   */
  static INDArray linearBackward(
      INDArray x,
      INDArray w,
      SparseMask mask,
      INDArray dy,
      INDArray dWOut,
      INDArray dbOut,
      INDArray denseDWOut) {
    INDArray dx;
    if (mask == null) {
      Nd4j.gemm(x, dy, dWOut, true, false, 1.0, 0.0);
      if (denseDWOut != null) {
        denseDWOut.assign(dWOut);
      }
      dx = dy.mmul(w.transpose());
    } else {
      // fully written (the kernels clear panels without kept blocks); row-major like the forward
      // output, so
      // TimeDistributed's reshape back to [B, T, n] is a view rather than a transposing copy
      dx = Nd4j.createUninitialized(w.dataType(), new long[] {x.size(0), x.size(1)}, 'c');
      if (denseDWOut != null) {
        SparseLinear.backwardInto(x, w, mask, dy, true, dx, denseDWOut, null);
        dWOut.assign(denseDWOut.mul(mask.cachedDense(w.dataType())));
      } else {
        SparseLinear.backwardInto(x, w, mask, dy, false, dx, dWOut, null);
      }
    }
    if (dbOut != null) {
      // ND4J's sum(0) over a row-major dy is a slow strided reduction, and its [1, N] x [N, n] mmul
      // (a GEMV) went
      // through the generic matmul op at ~0.5 ms a call; a contiguous loop in Java is faster than
      // both
      dbOut.assign(
          Nd4j.createFromArray(columnSums(dy)).castTo(dbOut.dataType()).reshape(dbOut.shape()));
    }
    return dx;
  }
}
