package org.sparseflow.ops.attention;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/** Shapes, block size and type of one attention call, checked once against the layout. */
final class AttentionGeometry {
  final int batch;
  final int heads;
  final int seqLen;
  final int headDim;
  final int block;
  final DataType type;

  AttentionGeometry(INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    if (layout == null) {
      throw new IllegalArgumentException(
          "layout=null; build one with AttentionPattern.layout(T, blockSize, heads)");
    }
    checkRank4("q", q);
    checkRank4("k", k);
    checkRank4("v", v);
    if (!Arrays.equals(q.shape(), k.shape()) || !Arrays.equals(q.shape(), v.shape())) {
      throw new IllegalArgumentException(
          "q, k, v must have the same shape [batch, heads, T, headDim]; got q="
              + Arrays.toString(q.shape())
              + " k="
              + Arrays.toString(k.shape())
              + " v="
              + Arrays.toString(v.shape()));
    }
    type = q.dataType();
    if (!type.isFPType()) {
      throw new IllegalArgumentException(
          "q dataType=" + type + "; allowed: FLOAT, DOUBLE (floating point)");
    }
    if (k.dataType() != type || v.dataType() != type) {
      throw new IllegalArgumentException(
          "q, k, v must have one data type; got q="
              + type
              + " k="
              + k.dataType()
              + " v="
              + v.dataType());
    }
    batch = (int) q.size(0);
    heads = (int) q.size(1);
    seqLen = (int) q.size(2);
    headDim = (int) q.size(3);
    block = layout.blockSize();
    if (seqLen != layout.seqLen()) {
      throw new IllegalArgumentException(
          "q has T="
              + seqLen
              + " but layout.seqLen="
              + layout.seqLen()
              + "; build the layout for this sequence length (T must be a multiple of blockSize="
              + block
              + ")");
    }
    if (layout.numHeads() != 1 && layout.numHeads() != heads) {
      throw new IllegalArgumentException(
          "q has heads="
              + heads
              + " but layout.numHeads="
              + layout.numHeads()
              + "; allowed: 1 (shared) or "
              + heads);
    }
    if (!(scale > 0) || Double.isInfinite(scale)) {
      throw new IllegalArgumentException("scale=" + scale + " must be a finite number > 0");
    }
  }

  void checkSame(String name, INDArray a) {
    checkRank4(name, a);
    if (!Arrays.equals(a.shape(), new long[] {batch, heads, seqLen, headDim})) {
      throw new IllegalArgumentException(
          name
              + " shape="
              + Arrays.toString(a.shape())
              + "; expected "
              + Arrays.toString(new long[] {batch, heads, seqLen, headDim})
              + " (same as q)");
    }
  }

  /**
   * Checks that the log-sum-exp {@code lse} is [batch, heads, seqLen]; {@code source} ends the
   * message (e.g. " from forward()").
   */
  void checkLse(INDArray lse, String source) {
    if (lse == null || !Arrays.equals(lse.shape(), new long[] {batch, heads, seqLen})) {
      throw new IllegalArgumentException(
          "lse shape="
              + (lse == null ? "null" : Arrays.toString(lse.shape()))
              + "; expected ["
              + batch
              + ", "
              + heads
              + ", "
              + seqLen
              + "]"
              + source);
    }
  }

  long rows() {
    return (long) batch * heads * seqLen;
  }

  static void checkRank4(String name, INDArray a) {
    if (a == null) {
      throw new IllegalArgumentException(
          name + "=null; expected an array [batch, heads, T, headDim]");
    }
    if (a.rank() != 4) {
      throw new IllegalArgumentException(
          name
              + " shape="
              + Arrays.toString(a.shape())
              + " has rank "
              + a.rank()
              + "; expected rank 4 [batch, heads, T, headDim]");
    }
  }
}
