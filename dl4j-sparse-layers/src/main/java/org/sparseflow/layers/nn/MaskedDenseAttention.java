package org.sparseflow.layers.nn;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.ops.attention.BlockLayout;

/**
 * Causal attention restricted to a {@link BlockLayout}, computed densely with ND4J batched matmuls
 * and a 0/1 keep mask (kept iff {@code layout.isKept(head, i, j)}). Same function as the sparse
 * kernel, but O(T^2) work; used when the kernel is switched off ({@code
 * -Dsparseflow.attention=dense}) and as an in-module reference.
 *
 * <p>P = softmax(scale q k^T) over the kept keys of each query, out = P v. Backward: dP = dOut v^T,
 * dS = P o (dP - rowsum(dP o P)), dq = scale dS k, dk = scale dS^T q, dv = P^T dOut.
 */
final class MaskedDenseAttention {
  private MaskedDenseAttention() {}

  /** q, k, v, out: [B, H, T, D]; p: [B*H*T, T] probabilities (exact zeros outside the pattern). */
  record Fwd(INDArray out, INDArray p) {}

  record Grads(INDArray dq, INDArray dk, INDArray dv) {}

  /** [B*H*T, T] 0/1 keep mask. */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  static INDArray keep(BlockLayout layout, long b, DataType dt) {
    int h = layout.numHeads(), t = layout.seqLen();
    double[] m = new double[(int) (b * h * t * t)];
    int idx = 0;
    for (long e = 0; e < b; e++) {
      for (int hh = 0; hh < h; hh++) {
        for (int i = 0; i < t; i++) {
          for (int j = 0; j < t; j++) {
            m[idx++] = layout.isKept(hh, i, j) ? 1.0 : 0.0;
          }
        }
      }
    }
    try (MemoryWorkspace ignored = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      return Nd4j.create(m, new long[] {b * h * t, t}, DataType.DOUBLE).castTo(dt);
    }
  }

  static Fwd forward(INDArray q, INDArray k, INDArray v, INDArray keep, double scale) {
    long b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
    INDArray s = Nd4j.matmul(q, k, false, true, false).muli(scale).reshape('c', b * h * t, t);
    // masked softmax: the max over kept keys only (the diagonal is always kept under causality)
    INDArray masked = s.add(keep.rsub(1.0).muli(-1e30));
    INDArray e = Transforms.exp(masked.subiColumnVector(masked.max(true, 1)), false).muli(keep);
    INDArray p = e.diviColumnVector(e.sum(true, 1));
    INDArray out = Nd4j.matmul(p.reshape('c', b, h, t, t), v);
    return new Fwd(out, p);
  }

  static Grads backward(INDArray q, INDArray k, INDArray v, Fwd f, INDArray dOut, double scale) {
    long b = q.size(0), h = q.size(1), t = q.size(2);
    INDArray p4 = f.p().reshape('c', b, h, t, t);
    INDArray dv = Nd4j.matmul(p4, dOut, true, false, false);
    INDArray dp = Nd4j.matmul(dOut, v, false, true, false).dup('c').reshape('c', b * h * t, t);
    INDArray rowDot = dp.mul(f.p()).sum(true, 1);
    INDArray ds = dp.subiColumnVector(rowDot).muli(f.p()).muli(scale).reshape('c', b, h, t, t);
    INDArray dq = Nd4j.matmul(ds, k);
    INDArray dk = Nd4j.matmul(ds, q, true, false, false);
    return new Grads(dq, dk, dv);
  }
}
