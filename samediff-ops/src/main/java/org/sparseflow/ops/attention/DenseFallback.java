package org.sparseflow.ops.attention;

import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.ops.transforms.Transforms;

/**
 * Dense masked attention with ND4J ops over the full {@code T x T} scores, used when the BLAS
 * kernels are not available (non-CPU backends). Same results as the sparse kernel (the mask is the
 * layout's effective mask), O(T^2) work.
 */
final class DenseFallback {

  private DenseFallback() {}

  /**
   * The attention probabilities P = exp(S - lse) [B,H,T,T] of the masked scaled scores S, and the
   * row log-sum-exp lse [B,H,T,1] of S.
   */
  private static INDArray[] probabilities(
      INDArray q, INDArray k, BlockLayout layout, double scale) {
    INDArray s = Nd4j.matmul(q, k, false, true, false).muli(scale);
    INDArray bias = SparseAttention.maskBias(layout, (int) q.size(1), q.dataType());
    s.addi(bias.reshape(1, q.size(1), q.size(2), q.size(2)).broadcast(s.shape()));
    INDArray max = s.max(true, 3);
    INDArray shifted = s.sub(max.broadcast(s.shape()));
    INDArray lse = Transforms.log(Transforms.exp(shifted, true).sum(true, 3), false).addi(max);
    INDArray p = Transforms.exp(s.subi(lse.broadcast(s.shape())), false);
    return new INDArray[] {p, lse};
  }

  static void forward(
      INDArray q,
      INDArray k,
      INDArray v,
      BlockLayout layout,
      double scale,
      INDArray out,
      INDArray lse) {
    INDArray[] pl = probabilities(q, k, layout, scale);
    INDArray p = pl[0];
    out.assign(Nd4j.matmul(p, v));
    lse.assign(pl[1].reshape(lse.shape()));
  }

  static void backward(
      INDArray q,
      INDArray k,
      INDArray v,
      INDArray out,
      INDArray dOut,
      BlockLayout layout,
      double scale,
      INDArray dq,
      INDArray dk,
      INDArray dv) {
    INDArray[] pl = probabilities(q, k, layout, scale);
    INDArray p = pl[0];
    dv.assign(Nd4j.matmul(p, dOut, true, false, false));
    INDArray dp = Nd4j.matmul(dOut, v, false, true, false);
    INDArray rowDot = dOut.mul(out).sum(true, 3);
    INDArray ds = dp.subi(rowDot.broadcast(dp.shape())).muli(p);
    dq.assign(Nd4j.matmul(ds, k).muli(scale));
    dk.assign(Nd4j.matmul(ds, q, true, false, false).muli(scale));
  }
}
