package org.sparseflow.ops.matmul;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.reduce.longer.MatchCondition;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.conditions.Conditions;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.SparseMask;

import java.util.Arrays;

/**
 * Sparse linear map y = x (W o M) + b with W [nIn, nOut] stored dense and M a {@link SparseMask}.
 *
 * <p>Block masks on the CPU backend run {@link BlockSparseKernels} (work proportional to kept blocks).
 * Element and N:M masks, and other backends, use the dense masked product (same numbers, no speedup).
 * The NaN check on inputs can be switched off with {@code -Dsparseflow.checkNaN=false}.
 */
public final class SparseLinear {

    /** Gradients of {@link #backward}: dx [N, nIn], dW [nIn, nOut], dBias [nOut]. */
    public record Grads(INDArray dx, INDArray dW, INDArray dBias) {
    }

    /**
     * Block masks denser than this use the dense masked product: per-block GEMMs repack the activations for every
     * output block and reach only about half of dense GEMM efficiency, so above ~0.4-0.5 dense is as fast.
     * Override with {@code -Dsparseflow.denseAbove=<density>}.
     */
    public static final double DENSE_ABOVE = Double.parseDouble(System.getProperty("sparseflow.denseAbove", "0.4"));

    private static final boolean CHECK_NAN = !"false".equalsIgnoreCase(System.getProperty("sparseflow.checkNaN"));

    private SparseLinear() {
    }

    /** y [N, nOut] = x [N, nIn] (W o M) + bias; bias may be null. */
    public static INDArray forward(INDArray x, INDArray w, INDArray bias, SparseMask mask) {
        validate(x, w, mask, "x");
        DataType dt = w.dataType();
        INDArray y = Nd4j.create(dt, new long[]{x.size(0), w.size(1)}, 'f');
        forwardChecked(x, w, bias, mask, y, true);
        return y;
    }

    /** As {@link #forward} but writes into y [N, nOut] (any BLAS-compatible layout; overwritten). */
    public static void forwardInto(INDArray x, INDArray w, INDArray bias, SparseMask mask, INDArray y) {
        validate(x, w, mask, "x");
        forwardChecked(x, w, bias, mask, y, false);
    }

    /** Forward after validation of x, w, mask; {@code yIsZero} skips clearing a freshly allocated y. */
    private static void forwardChecked(INDArray x, INDArray w, INDArray bias, SparseMask mask, INDArray y, boolean yIsZero) {
        if (bias != null) {
            if (bias.length() != w.size(1)) {
                throw new IllegalArgumentException("bias has shape " + Arrays.toString(bias.shape()) + "; expected length nOut = " + w.size(1));
            }
            checkNoNaN("bias", bias);
        }
        checkOutput("y", y, x.size(0), w.size(1));
        if (useBlockKernels(mask) && BlockSparseKernels.supports(x, w, y)) {
            INDArray xb = BlockSparseKernels.blasCompatible(x);
            INDArray wb = BlockSparseKernels.blasCompatible(w);
            INDArray yb = BlockSparseKernels.blasCompatible(y);
            if (!yIsZero || yb != y) {
                yb.assign(0.0);
            }
            BlockSparseKernels.forwardAccumulate(xb, wb, (BlockMask) mask, yb);
            if (yb != y) {
                y.assign(yb);
            }
        } else {
            x.mmul(w.mul(mask.cachedDense(w.dataType())), y);   // x and w share a type (validated)
        }
        if (bias != null) {
            y.addiRowVector(bias.reshape(1, w.size(1)).castTo(y.dataType()));
        }
    }

    /**
     * Gradients of y = x (W o M) + b. dW is zero outside the mask unless {@code denseWeightGrad}, in which
     * case it is the full x^T dy (what RigL-style regrowth needs).
     */
    public static Grads backward(INDArray x, INDArray w, SparseMask mask, INDArray dy, boolean denseWeightGrad) {
        validate(x, w, mask, "x");
        DataType dt = w.dataType();
        INDArray dx = Nd4j.create(dt, new long[]{x.size(0), x.size(1)}, 'f');
        INDArray dW = Nd4j.create(dt, new long[]{w.size(0), w.size(1)}, 'f');
        INDArray dBias = Nd4j.create(dt, w.size(1));
        backwardChecked(x, w, mask, dy, denseWeightGrad, dx, dW, dBias, true);
        return new Grads(dx, dW, dBias);
    }

    /** As {@link #backward} but writes into the given arrays (each may be null to skip it). */
    public static void backwardInto(INDArray x, INDArray w, SparseMask mask, INDArray dy, boolean denseWeightGrad,
                                    INDArray dx, INDArray dW, INDArray dBias) {
        validate(x, w, mask, "x");
        backwardChecked(x, w, mask, dy, denseWeightGrad, dx, dW, dBias, false);
    }

    /** Backward after validation of x, w, mask; {@code outputsAreZero} skips clearing fresh outputs. */
    private static void backwardChecked(INDArray x, INDArray w, SparseMask mask, INDArray dy, boolean denseWeightGrad,
                                        INDArray dx, INDArray dW, INDArray dBias, boolean outputsAreZero) {
        MaskCheck.matrix("dy", dy);
        if (dy.size(0) != x.size(0) || dy.size(1) != w.size(1)) {
            throw new IllegalArgumentException("dy has shape " + Arrays.toString(dy.shape()) + "; expected [" + x.size(0) + ", " + w.size(1) + "]");
        }
        checkNoNaN("dy", dy);
        if (dx != null) {
            checkOutput("dx", dx, x.size(0), x.size(1));
        }
        if (dW != null) {
            checkOutput("dW", dW, w.size(0), w.size(1));
        }
        DataType dt = w.dataType();
        boolean fast = useBlockKernels(mask) && BlockSparseKernels.supports(x, w, dy)
                && (dx == null || dx.dataType() == dt) && (dW == null || dW.dataType() == dt);
        if (fast) {
            BlockMask bm = (BlockMask) mask;
            INDArray xb = BlockSparseKernels.blasCompatible(x);
            INDArray wb = BlockSparseKernels.blasCompatible(w);
            INDArray dyb = BlockSparseKernels.blasCompatible(dy);
            if (dx != null) {
                INDArray dxb = BlockSparseKernels.blasCompatible(dx);
                if (!outputsAreZero || dxb != dx) {
                    dxb.assign(0.0);
                }
                BlockSparseKernels.inputGradAccumulate(dyb, wb, bm, dxb);
                if (dxb != dx) {
                    dx.assign(dxb);
                }
            }
            if (dW != null) {
                if (denseWeightGrad) {
                    dW.assign(xb.transpose().mmul(dyb));
                } else {
                    INDArray dWb = BlockSparseKernels.blasCompatible(dW);
                    if (!outputsAreZero || dWb != dW) {
                        dWb.assign(0.0);
                    }
                    BlockSparseKernels.weightGradKept(xb, dyb, bm, dWb);
                    if (dWb != dW) {
                        dW.assign(dWb);
                    }
                }
            }
        } else {
            INDArray m = mask.cachedDense(dt);
            INDArray dyc = dy.castTo(dt);
            if (dx != null) {
                dyc.mmul(w.mul(m).transpose(), dx);
            }
            if (dW != null) {
                x.transpose().mmul(dyc, dW);
                if (!denseWeightGrad) {
                    dW.muli(m);
                }
            }
        }
        if (dBias != null) {
            if (dBias.length() != w.size(1)) {
                throw new IllegalArgumentException("dBias has shape " + Arrays.toString(dBias.shape()) + "; expected length " + w.size(1));
            }
            dBias.assign(dy.sum(0).reshape(dBias.shape()));
        }
    }

    private static boolean useBlockKernels(SparseMask mask) {
        return mask instanceof BlockMask && mask.density() <= DENSE_ABOVE;
    }

    // ------------------------------------------------------------------ FLOP accounting

    /** Forward multiply-add FLOPs (2 per MAC) of an N x nIn by nIn x nOut product at a weight density. */
    public static double forwardFlops(long batch, long nIn, long nOut, double density) {
        return 2.0 * batch * nIn * nOut * density;
    }

    /** Backward FLOPs: dx at the mask density plus dW at the mask density (or dense when requested). */
    public static double backwardFlops(long batch, long nIn, long nOut, double density, boolean denseWeightGrad) {
        return 2.0 * batch * nIn * nOut * density + 2.0 * batch * nIn * nOut * (denseWeightGrad ? 1.0 : density);
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
            throw new IllegalArgumentException("w has data type " + w.dataType() + "; allowed: FLOAT, DOUBLE, HALF, BFLOAT16");
        }
        if (x.dataType() != w.dataType()) {
            throw new IllegalArgumentException(xName + " has data type " + x.dataType() + " but w has " + w.dataType() + "; they must match");
        }
        if (x.size(1) != w.size(0)) {
            throw new IllegalArgumentException(xName + " has shape " + Arrays.toString(x.shape()) + "; expected [N, " + w.size(0)
                    + "] to match w " + Arrays.toString(w.shape()));
        }
        checkNoNaN(xName, x);
        checkNoNaN("w", w);
    }

    private static void checkOutput(String name, INDArray out, long rows, long cols) {
        MaskCheck.matrix(name, out);
        if (out.size(0) != rows || out.size(1) != cols) {
            throw new IllegalArgumentException(name + " has shape " + Arrays.toString(out.shape()) + "; expected [" + rows + ", " + cols + "]");
        }
    }

    /** Throws IllegalArgumentException naming the argument if a contains NaN (unless -Dsparseflow.checkNaN=false). */
    public static void requireNoNaN(String name, INDArray a) {
        checkNoNaN(name, a);
    }

    static void checkNoNaN(String name, INDArray a) {
        if (!CHECK_NAN || !a.dataType().isFPType()) {
            return;
        }
        // one vectorised sum finds NaN cheaply (NaN propagates); count exactly only for the error message
        double sum = a.sumNumber().doubleValue();
        if (!Double.isNaN(sum)) {
            return;
        }
        long nans = Nd4j.getExecutioner().exec(new MatchCondition(a, Conditions.isNan())).getLong(0);
        if (nans > 0) {
            throw new IllegalArgumentException(name + " contains " + nans + " NaN value(s); allowed: finite numbers");
        }
    }

    /** Small shared argument checks. */
    static final class MaskCheck {
        private MaskCheck() {
        }

        static void matrix(String name, INDArray a) {
            if (a == null) {
                throw new IllegalArgumentException(name + " = null; a rank-2 matrix is required");
            }
            if (a.rank() != 2) {
                throw new IllegalArgumentException(name + " has shape " + Arrays.toString(a.shape()) + "; allowed: rank 2");
            }
        }
    }
}
