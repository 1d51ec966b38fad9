package org.sparseflow.ops.attention;

import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * Contiguous row-major [B*H*T, D] copies of q, k and v with their native addresses (and Java copies
 * when the type needs them), shared by the forward and backward kernels.
 */
final class AttentionOperands {
  final INDArray q2;
  final INDArray k2;
  final INDArray v2;
  final long qAddr;
  final long kAddr;
  final long vAddr;
  final double[] qa;
  final double[] ka;
  final double[] va;

  AttentionOperands(
      AttentionGeometry g, INDArray q2, INDArray k2, INDArray v2, boolean javaCopies) {
    this.q2 = q2;
    this.k2 = k2;
    this.v2 = v2;
    qAddr = NativeGemm.address(q2);
    kAddr = NativeGemm.address(k2);
    vAddr = NativeGemm.address(v2);
    qa = javaCopies ? NativeGemm.toDoubles(q2) : null;
    ka = javaCopies ? NativeGemm.toDoubles(k2) : null;
    va = javaCopies ? NativeGemm.toDoubles(v2) : null;
  }
}
