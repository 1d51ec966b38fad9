package org.sparseflow.ops.samediff;

import java.util.Arrays;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.SparseAttention;

/** Factories for the sparse attention SameDiff op ({@link SparseAttentionOp}). */
public final class SparseAttentionOps {

  private SparseAttentionOps() {}

  /**
   * Causal block-sparse attention {@code softmax(Q K^T / sqrt(D) + causal/sparse mask) V} over
   * {@code [batch, heads, T, headDim]} inputs; T must be a multiple of {@code blockSize} at run
   * time. Returns the attention output {@code [B,H,T,D]}.
   */
  public static SDVariable sparseAttention(
      SameDiff sd,
      SDVariable q,
      SDVariable k,
      SDVariable v,
      AttentionPattern pattern,
      int blockSize) {
    return sparseAttention(sd, null, q, k, v, pattern, blockSize, Double.NaN);
  }

  /**
   * Full form: optional output name; {@code scale} NaN means {@code 1/sqrt(headDim)}, which then
   * needs the head dimension in q's static shape.
   */
  public static SDVariable sparseAttention(
      SameDiff sd,
      String name,
      SDVariable q,
      SDVariable k,
      SDVariable v,
      AttentionPattern pattern,
      int blockSize,
      double scale) {
    if (sd == null || q == null || k == null || v == null) {
      throw new IllegalArgumentException(
          "sd, q, k and v must be non-null; got sd=" + sd + " q=" + q + " k=" + k + " v=" + v);
    }
    if (Double.isNaN(scale)) {
      long[] shape = q.getShape();
      if (shape == null || shape.length != 4 || shape[3] <= 0) {
        throw new IllegalArgumentException(
            "q static shape="
                + Arrays.toString(shape)
                + " does not give headDim; pass an explicit scale (e.g. 1/sqrt(headDim))");
      }
      scale = SparseAttention.defaultScale(shape[3]);
    }
    SDVariable out =
        new SparseAttentionOp(sd, q, k, v, pattern, blockSize, scale).outputVariables()[0];
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }
}
