package org.sparseflow.ops.samediff;

import java.util.Arrays;
import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.SparseLinear;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Array-level forward/backward used by the SameDiff sparse matmul ops (mask given as a dense 0/1
 * array).
 */
final class SparseMatmulKernels {

  private SparseMatmulKernels() {}

  static void checkInputs(List<INDArray> inputs, boolean backward) {
    int min = backward ? 4 : 3;
    if (inputs.size() < min) {
      throw new IllegalArgumentException(
          "inputs has "
              + inputs.size()
              + " arrays; expected x, w, mask"
              + (backward ? ", [bias], dy" : ", [bias]"));
    }
    INDArray x = inputs.get(0), w = inputs.get(1), m = inputs.get(2);
    if (w.rank() != 2) {
      throw new IllegalArgumentException(
          "w has shape " + Arrays.toString(w.shape()) + "; allowed: rank 2 [nIn, nOut]");
    }
    if (x.rank() < 2 || x.size(-1) != w.size(0)) {
      throw new IllegalArgumentException(
          "x has shape " + Arrays.toString(x.shape()) + "; expected [..., " + w.size(0) + "]");
    }
    if (!Arrays.equals(m.shape(), w.shape())) {
      throw new IllegalArgumentException(
          "mask has shape "
              + Arrays.toString(m.shape())
              + "; expected "
              + Arrays.toString(w.shape()));
    }
  }

  /** Flattens leading dimensions: [..., k] -> [n, k] (a view when possible). */
  static INDArray as2d(INDArray a) {
    if (a.rank() == 2) {
      return a;
    }
    return a.reshape('c', a.length() / a.size(-1), a.size(-1));
  }

  private static SparseMask blockMask(INDArray w, INDArray mask, int blockSize, BlockMask layout) {
    if (blockSize <= 0) {
      return null;
    }
    if (layout != null && layout.rows() == w.size(0) && layout.cols() == w.size(1)) {
      return layout;
    }
    return PatternSpec.block(blockSize).fromDense(mask);
  }

  /** Checks a cached layout against the op's block size (null passes). */
  static BlockMask checkLayout(BlockMask layout, int blockSize) {
    if (layout != null && layout.blockSize() != blockSize) {
      throw new IllegalArgumentException(
          "layout has block size "
              + layout.blockSize()
              + "; the op's block size is "
              + blockSize
              + (blockSize == 0 ? " (element-wise mask: no block layout allowed)" : ""));
    }
    return layout;
  }

  /**
   * A 2-D array to compute into: out itself when rank 2, else a fresh [n, k] array copied back by
   * {@link #copyBack}.
   */
  private static INDArray target2d(INDArray out) {
    return out.rank() == 2
        ? out
        : Nd4j.create(out.dataType(), out.length() / out.size(-1), out.size(-1));
  }

  private static void copyBack(INDArray out2, INDArray out) {
    if (out2 != out) {
      out.assign(out2.reshape('c', out.shape()));
    }
  }

  static void forward(
      INDArray x,
      INDArray w,
      INDArray mask,
      INDArray bias,
      int blockSize,
      BlockMask layout,
      INDArray out) {
    INDArray x2 = as2d(x);
    INDArray out2 = target2d(out);
    SparseMask bm = blockMask(w, mask, blockSize, layout);
    if (bm != null) {
      SparseLinear.forwardInto(x2, w, bias, bm, out2);
    } else {
      check(x2, w, mask);
      INDArray y = x2.mmul(w.mul(mask));
      if (bias != null) {
        y.addiRowVector(bias.reshape(1, w.size(1)));
      }
      out2.assign(y);
    }
    copyBack(out2, out);
  }

  static void backward(
      INDArray x,
      INDArray w,
      INDArray mask,
      INDArray dy,
      int blockSize,
      BlockMask layout,
      boolean denseWeightGrad,
      INDArray dx,
      INDArray dW,
      INDArray dBias) {
    INDArray x2 = as2d(x);
    INDArray dy2 = as2d(dy);
    INDArray dx2 = target2d(dx);
    SparseMask bm = blockMask(w, mask, blockSize, layout);
    if (bm != null) {
      SparseLinear.backwardInto(x2, w, bm, dy2, denseWeightGrad, dx2, dW, dBias);
    } else {
      check(x2, w, mask);
      SparseLinear.requireNoNaN("dy", dy2);
      dx2.assign(dy2.mmul(w.mul(mask).transpose()));
      INDArray g = x2.transpose().mmul(dy2);
      if (!denseWeightGrad) {
        g.muli(mask);
      }
      dW.assign(g);
      if (dBias != null) {
        dBias.assign(dy2.sum(0).reshape(dBias.shape()));
      }
    }
    copyBack(dx2, dx);
  }

  private static void check(INDArray x2, INDArray w, INDArray mask) {
    if (x2.dataType() != w.dataType()) {
      throw new IllegalArgumentException(
          "x has data type " + x2.dataType() + " but w has " + w.dataType() + "; they must match");
    }
    SparseLinear.requireNoNaN("x", x2);
    SparseLinear.requireNoNaN("w", w);
  }
}
