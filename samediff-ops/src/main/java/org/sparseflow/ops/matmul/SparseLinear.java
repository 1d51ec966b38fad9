package org.sparseflow.ops.matmul;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.reduce.longer.MatchCondition;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.conditions.Conditions;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Sparse linear map y = x (W o M) + b with W [nIn, nOut] stored dense and M a {@link SparseMask}.
 *
 * <p>Block masks on the CPU backend run {@link BlockSparseKernels} (work proportional to kept
 * blocks). Element and N:M masks, and other backends, use the dense masked product (same numbers,
 * no speedup). The NaN check on inputs can be switched off with {@code
 * -Dsparseflow.checkNaN=false}.
 */
public final class SparseLinear {

  /** Gradients of {@link #backward}: dx [N, nIn], dW [nIn, nOut], dBias [nOut]. */
  public record Grads(INDArray dx, INDArray dW, INDArray dBias) {}

  /**
   * Block masks denser than this use the dense product (per-block kernels lose to dense GEMM above
   * it): measured once per JVM on this host by {@link DenseBreakEven} unless fixed with {@code
   * -Dsparseflow.denseAbove=<density>}.
   */
  public static double denseAbove() {
    return DenseBreakEven.get();
  }

  private static final boolean CHECK_NAN =
      !"false".equalsIgnoreCase(System.getProperty("sparseflow.checkNaN"));

  private SparseLinear() {}

  /** y [N, nOut] = x [N, nIn] (W o M) + bias; bias may be null. */
  public static INDArray forward(INDArray x, INDArray w, INDArray bias, SparseMask mask) {
    validate(x, w, mask, "x");
    DataType dt = w.dataType();
    // the block kernels overwrite every element, so the output need not be cleared first; the
    // vector kernels write token rows, so they get a row-major output
    INDArray y;
    if (vectorPath(mask, x, w)) {
      y = Nd4j.createUninitialized(dt, new long[] {x.size(0), w.size(1)}, 'c');
    } else if (fastPath(mask, x, w)) {
      y = Nd4j.createUninitialized(dt, new long[] {x.size(0), w.size(1)}, 'f');
    } else {
      // dense: one BLAS GEMM on the operands as they are, into a row-major y (DenseGemm)
      if (bias != null) {
        checkBias(bias, w);
      }
      INDArray wd = denseWeights(w, mask);
      y =
          DenseGemm.direct(x, wd)
              ? DenseGemm.output(dt, x.size(0), w.size(1))
              : Nd4j.create(dt, x.size(0), w.size(1));
      denseForward(x, w, wd, y);
      addBias(y, bias, w);
      return y;
    }
    forwardChecked(x, w, bias, mask, y);
    return y;
  }

  /** As {@link #forward} but writes into y [N, nOut] (any BLAS-compatible layout; overwritten). */
  public static void forwardInto(
      INDArray x, INDArray w, INDArray bias, SparseMask mask, INDArray y) {
    validate(x, w, mask, "x");
    forwardChecked(x, w, bias, mask, y);
  }

  /**
   * Forward after validation of shapes and types. On the block-kernel path NaN in x or in kept
   * weights is found by the kernel's probe of the output (a NaN that no kept block reads does not
   * matter); elsewhere x and w are checked up front.
   */
  private static void forwardChecked(
      INDArray x, INDArray w, INDArray bias, SparseMask mask, INDArray y) {
    if (bias != null) {
      checkBias(bias, w);
    }
    checkOutput("y", y, x.size(0), w.size(1));
    if (vectorPath(mask, x, w, y)) {
      if (VectorBlockKernels.forward(x, w, (BlockMask) mask, y)) {
        checkNoNaN("x", x);
        checkNoNaNKept("w", w, mask);
      }
    } else if (fastPath(mask, x, w, y)) {
      INDArray xb = BlockSparseKernels.blasCompatible(x);
      INDArray wb = BlockSparseKernels.blasCompatible(w);
      INDArray yb = BlockSparseKernels.blasCompatible(y);
      BlockSparseKernels.Probe probe =
          BlockSparseKernels.forward(xb, wb, (BlockMask) mask, yb, true);
      if (probe == BlockSparseKernels.Probe.NAN) {
        checkNoNaN("x", x);
        checkNoNaNKept("w", w, mask);
      }
      if (yb != y) {
        y.assign(yb);
      }
    } else {
      denseForward(x, w, denseWeights(w, mask), y);
    }
    addBias(y, bias, w);
  }

  /** W o M for the dense path: W itself when the mask keeps everything, else one masked copy. */
  private static INDArray denseWeights(INDArray w, SparseMask mask) {
    return mask.density() >= 1.0 ? w : w.mul(mask.cachedDense(w.dataType()));
  }

  /**
   * y = x·wd by one BLAS GEMM, then the NaN check of x and w from y: a NaN in x[i, k] makes row i
   * of y NaN and a NaN in wd[k, j] column j (NaN times any number, zero included, is NaN, and
   * OpenBLAS's GEMM kernels multiply every term), so column 0 and row 0 of y (N + nOut reads)
   * reveal a NaN anywhere in x or wd; only then are x and w scanned (N·nIn + nIn·nOut reads, 2-4 %
   * of a density-1 forward when done up front). A NaN in a pruned weight reaches y through the
   * masked copy's NaN·0, as the up-front scan of w found it.
   */
  private static void denseForward(INDArray x, INDArray w, INDArray wd, INDArray y) {
    DenseGemm.gemm(x, false, wd, false, y);
    if (CHECK_NAN
        && y.length() > 0
        && y.dataType().isFPType()
        && NanProbe.firstRowOrColumnHasNaN(y)) {
      checkNoNaN("x", x);
      checkNoNaN("w", w);
    }
  }

  private static void addBias(INDArray y, INDArray bias, INDArray w) {
    if (bias != null) {
      y.addiRowVector(bias.reshape(1, w.size(1)).castTo(y.dataType()));
    }
  }

  private static void checkBias(INDArray bias, INDArray w) {
    if (bias.length() != w.size(1)) {
      throw new IllegalArgumentException(
          "bias has shape "
              + Arrays.toString(bias.shape())
              + "; expected length nOut = "
              + w.size(1));
    }
    checkNoNaN("bias", bias);
  }

  /**
   * y [N, cols] += bias (length cols) on every row, in place (one BLAS rank-1 update where BLAS
   * applies).
   */
  public static void addBias(INDArray y, INDArray bias) {
    DenseGemm.addRowVector(y, bias);
  }

  /**
   * dBias = the column sums of dy [N, cols] (one BLAS GEMV against ones where BLAS applies, else
   * ND4J's sum over rows), written into dBias (length cols).
   */
  public static void biasGradient(INDArray dy, INDArray dBias) {
    DenseGemm.columnSums(dy, dBias.rank() == 1 ? dBias : dBias.reshape(dBias.length()));
  }

  /**
   * Gradients of y = x (W o M) + b. dW is zero outside the mask unless {@code denseWeightGrad}, in
   * which case it is the full x^T dy (what RigL-style regrowth needs).
   */
  public static Grads backward(
      INDArray x, INDArray w, SparseMask mask, INDArray dy, boolean denseWeightGrad) {
    validate(x, w, mask, "x");
    DataType dt = w.dataType();
    boolean vector = vectorPath(mask, x, w, dy);
    boolean fast = !vector && fastPath(mask, x, w);
    // the dense path's BLAS GEMMs (beta = 0) overwrite their outputs whole
    boolean denseDirect = !useBlockKernels(mask) && DenseGemm.direct(x, w, dy);
    INDArray dx =
        vector || denseDirect
            ? Nd4j.createUninitialized(dt, new long[] {x.size(0), x.size(1)}, 'c')
            : fast
                ? Nd4j.createUninitialized(
                    dt, new long[] {x.size(0), x.size(1)}, 'f') // overwritten by the kernel
                : Nd4j.create(dt, new long[] {x.size(0), x.size(1)}, 'f');
    // a row-major dW is overwritten whole by the vector kernel and by a dense GEMM
    boolean dWOverwritten =
        (vector && !denseWeightGrad)
            || denseDirect
            || (denseWeightGrad && useBlockKernels(mask) && DenseGemm.direct(x, dy));
    INDArray dW =
        dWOverwritten
            ? Nd4j.createUninitialized(dt, new long[] {w.size(0), w.size(1)}, 'c')
            : Nd4j.create(dt, new long[] {w.size(0), w.size(1)}, 'f');
    INDArray dBias = Nd4j.create(dt, w.size(1));
    backwardChecked(x, w, mask, dy, denseWeightGrad, dx, dW, dBias, true);
    return new Grads(dx, dW, dBias);
  }

  /** As {@link #backward} but writes into the given arrays (each may be null to skip it). */
  public static void backwardInto(
      INDArray x,
      INDArray w,
      SparseMask mask,
      INDArray dy,
      boolean denseWeightGrad,
      INDArray dx,
      INDArray dW,
      INDArray dBias) {
    validate(x, w, mask, "x");
    backwardChecked(x, w, mask, dy, denseWeightGrad, dx, dW, dBias, false);
  }

  /**
   * Backward after validation of x, w, mask; {@code dWIsZero} skips clearing a fresh dW. NaN
   * checks: dy through dBias (every element of dy enters the column sums), x up front when dW is
   * wanted, kept weights through the kernel's probe of dx (dW = x^T dy does not read w).
   */
  private static void backwardChecked(
      INDArray x,
      INDArray w,
      SparseMask mask,
      INDArray dy,
      boolean denseWeightGrad,
      INDArray dx,
      INDArray dW,
      INDArray dBias,
      boolean dWIsZero) {
    MaskCheck.matrix("dy", dy);
    if (dy.size(0) != x.size(0) || dy.size(1) != w.size(1)) {
      throw new IllegalArgumentException(
          "dy has shape "
              + Arrays.toString(dy.shape())
              + "; expected ["
              + x.size(0)
              + ", "
              + w.size(1)
              + "]");
    }
    if (dx != null) {
      checkOutput("dx", dx, x.size(0), x.size(1));
    }
    if (dW != null) {
      checkOutput("dW", dW, w.size(0), w.size(1));
    }
    boolean vector = vectorPath(mask, x, w, dy, dx, dW);
    // the vector kernel sums dy's columns while it reads dy (into a contiguous fp32 dBias)
    boolean fusedBias =
        vector && dBias != null && !dBias.isView() && dBias.dataType() == DataType.FLOAT;
    if (dBias != null) {
      if (dBias.length() != w.size(1)) {
        throw new IllegalArgumentException(
            "dBias has shape " + Arrays.toString(dBias.shape()) + "; expected length " + w.size(1));
      }
      if (!fusedBias) {
        DenseGemm.columnSums(dy, dBias);
        if (Double.isNaN(dBias.sumNumber().doubleValue())) {
          checkNoNaN("dy", dy);
        }
      }
    } else {
      checkNoNaN("dy", dy);
    }
    if (dW != null && !vector) {
      checkNoNaN("x", x); // the vector kernel probes x on the tiles it reads
    }
    DataType dt = w.dataType();
    if (vector) {
      // a row-major dW is overwritten whole by the kernel; other layouts get the kept blocks only
      if (dW != null && !denseWeightGrad && !dWIsZero && dW.stride(1) != 1) {
        dW.assign(0.0);
      }
      VectorBlockKernels.Gradients g =
          VectorBlockKernels.backward(
              x,
              w,
              (BlockMask) mask,
              dy,
              dx,
              denseWeightGrad ? null : dW,
              fusedBias ? dBias : null);
      if (g.activationNaN() || (dW != null && denseWeightGrad)) {
        checkNoNaN("x", x);
      }
      if (g.inputNaN()) {
        checkNoNaNKept("w", w, mask);
      }
      if (fusedBias && Double.isNaN(BlockSparseKernels.probeSum(dBias))) {
        checkNoNaN("dy", dy);
      }
      if (dW != null && denseWeightGrad) {
        DenseGemm.gemm(x, true, dy, false, dW);
      }
      return;
    }
    boolean fast =
        fastPath(mask, x, w, dy)
            && (dx == null || dx.dataType() == dt)
            && (dW == null || dW.dataType() == dt);
    if (fast) {
      BlockMask bm = (BlockMask) mask;
      INDArray xb = BlockSparseKernels.blasCompatible(x);
      INDArray wb = BlockSparseKernels.blasCompatible(w);
      INDArray dyb = BlockSparseKernels.blasCompatible(dy);
      if (dx != null) {
        INDArray dxb = BlockSparseKernels.blasCompatible(dx);
        if (BlockSparseKernels.inputGrad(dyb, wb, bm, dxb, true) == BlockSparseKernels.Probe.NAN) {
          checkNoNaNKept("w", w, mask);
        }
        if (dxb != dx) {
          dx.assign(dxb);
        }
      }
      if (dW != null) {
        if (denseWeightGrad) {
          DenseGemm.gemm(xb, true, dyb, false, dW);
        } else {
          INDArray dWb = BlockSparseKernels.blasCompatible(dW);
          if (!dWIsZero || dWb != dW) {
            dWb.assign(0.0);
          }
          BlockSparseKernels.weightGradKept(xb, dyb, bm, dWb);
          if (dWb != dW) {
            dW.assign(dWb);
          }
        }
      }
    } else {
      checkNoNaN("w", w);
      boolean full = mask.density() >= 1.0; // keeps everything: no products with the mask
      INDArray m = full ? null : mask.cachedDense(dt);
      INDArray dyc = dy.castTo(dt);
      if (dx != null) {
        DenseGemm.gemm(dyc, false, full ? w : w.mul(m), true, dx);
      }
      if (dW != null) {
        DenseGemm.gemm(x, true, dyc, false, dW);
        if (!denseWeightGrad && !full) {
          dW.muli(m);
        }
      }
    }
  }

  /** True when the JDK Vector API kernels run for this mask and these operands. */
  private static boolean vectorPath(SparseMask mask, INDArray... arrays) {
    return useBlockKernels(mask) && VectorSupport.applies((BlockMask) mask, arrays);
  }

  /** True when the block kernels run for this mask and these operands. */
  private static boolean fastPath(SparseMask mask, INDArray... arrays) {
    return useBlockKernels(mask) && BlockSparseKernels.supports(arrays);
  }

  private static boolean useBlockKernels(SparseMask mask) {
    // a mask that keeps every block is a dense layer: ND4J's GEMM, never slower than itself
    return mask instanceof BlockMask && mask.density() < 1.0 && mask.density() <= denseAbove();
  }

  // ------------------------------------------------------------------ FLOP accounting

  /**
   * Forward multiply-add FLOPs (2 per MAC) of an N x nIn by nIn x nOut product at a weight density.
   */
  public static double forwardFlops(long batch, long nIn, long nOut, double density) {
    return 2.0 * batch * nIn * nOut * density;
  }

  /**
   * Backward FLOPs: dx at the mask density plus dW at the mask density (or dense when requested).
   */
  public static double backwardFlops(
      long batch, long nIn, long nOut, double density, boolean denseWeightGrad) {
    return 2.0 * batch * nIn * nOut * density
        + 2.0 * batch * nIn * nOut * (denseWeightGrad ? 1.0 : density);
  }

  /** Forward FLOPs for a concrete mask. */
  public static double forwardFlops(long batch, SparseMask mask) {
    return 2.0 * batch * mask.nnz();
  }

  /** Backward FLOPs for a concrete mask. */
  public static double backwardFlops(long batch, SparseMask mask, boolean denseWeightGrad) {
    return backwardFlops(batch, mask.rows(), mask.cols(), mask.density(), denseWeightGrad);
  }

  // ------------------------------------------------------------------ validation

  private static void validate(INDArray x, INDArray w, SparseMask mask, String xName) {
    if (mask == null) {
      throw new IllegalArgumentException("mask = null; a SparseMask matching w is required");
    }
    MaskCheck.matrix(xName, x);
    mask.checkShape("w", w);
    if (!w.dataType().isFPType()) {
      throw new IllegalArgumentException(
          "w has data type " + w.dataType() + "; allowed: FLOAT, DOUBLE, HALF, BFLOAT16");
    }
    if (x.dataType() != w.dataType()) {
      throw new IllegalArgumentException(
          xName
              + " has data type "
              + x.dataType()
              + " but w has "
              + w.dataType()
              + "; they must match");
    }
    if (x.size(1) != w.size(0)) {
      throw new IllegalArgumentException(
          xName
              + " has shape "
              + Arrays.toString(x.shape())
              + "; expected [N, "
              + w.size(0)
              + "] to match w "
              + Arrays.toString(w.shape()));
    }
  }

  private static void checkOutput(String name, INDArray out, long rows, long cols) {
    MaskCheck.matrix(name, out);
    if (out.size(0) != rows || out.size(1) != cols) {
      throw new IllegalArgumentException(
          name
              + " has shape "
              + Arrays.toString(out.shape())
              + "; expected ["
              + rows
              + ", "
              + cols
              + "]");
    }
  }

  /**
   * Throws IllegalArgumentException naming the argument if a contains NaN (unless
   * -Dsparseflow.checkNaN=false).
   */
  public static void requireNoNaN(String name, INDArray a) {
    checkNoNaN(name, a);
  }

  /** Throws if w has NaN where the mask keeps weights (pruned entries are never read). */
  static void checkNoNaNKept(String name, INDArray w, SparseMask mask) {
    if (!CHECK_NAN) {
      return;
    }
    INDArray keptNaN = w.isNaN().castTo(w.dataType()).muli(mask.cachedDense(w.dataType()));
    long nans = Math.round(keptNaN.sumNumber().doubleValue());
    if (nans > 0) {
      throw new IllegalArgumentException(
          name + " contains " + nans + " NaN value(s) in kept weights; allowed: finite numbers");
    }
  }

  static void checkNoNaN(String name, INDArray a) {
    if (!CHECK_NAN || !a.dataType().isFPType()) {
      return;
    }
    // one vectorised sum finds NaN cheaply (NaN propagates); count exactly only for the error
    // message
    double sum = BlockSparseKernels.probeSum(a);
    if (!Double.isNaN(sum)) {
      return;
    }
    long nans = Nd4j.getExecutioner().exec(new MatchCondition(a, Conditions.isNan())).getLong(0);
    if (nans > 0) {
      throw new IllegalArgumentException(
          name + " contains " + nans + " NaN value(s); allowed: finite numbers");
    }
  }

  /** Small shared argument checks. */
  static final class MaskCheck {
    private MaskCheck() {}

    static void matrix(String name, INDArray a) {
      if (a == null) {
        throw new IllegalArgumentException(name + " = null; a rank-2 matrix is required");
      }
      if (a.rank() != 2) {
        throw new IllegalArgumentException(
            name + " has shape " + Arrays.toString(a.shape()) + "; allowed: rank 2");
      }
    }
  }
}
