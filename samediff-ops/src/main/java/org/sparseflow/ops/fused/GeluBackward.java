package org.sparseflow.ops.fused;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * GELU's backward pass on ND4J arrays: the Vector API kernel over the buffers when it applies
 * (FLOAT, 'c'-contiguous, the vector module present), else {@link GeluMath} over Java copies.
 */
public final class GeluBackward {
  private GeluBackward() {}

  /** Whether the vector kernel serves these arrays. */
  static boolean vectorApplies(INDArray... arrays) {
    if (!VectorSupport.AVAILABLE) {
      return false;
    }
    for (INDArray a : arrays) {
      if (a.dataType() != DataType.FLOAT || !HostArrays.cContiguous(a) || a.length() > (1 << 29)) {
        return false;
      }
    }
    return true;
  }

  /** dz = dy o gelu'(z), with the sigmoid from {@code a = gelu(z)}; all four of z's shape. */
  public static void backward(INDArray z, INDArray a, INDArray dy, INDArray dz) {
    int n = (int) z.length();
    if (vectorApplies(z, a, dy, dz)) {
      GeluVectorKernel.backward(z, a, dy, dz);
    } else if (z.dataType() == DataType.FLOAT) {
      float[] e = HostArrays.readFloats(dy, 2);
      GeluMath.backward(HostArrays.readFloats(z, 0), HostArrays.readFloats(a, 1), e, n);
      HostArrays.write(e, dz);
    } else {
      double[] e = HostArrays.readDoubles(dy, 2);
      GeluMath.backward(HostArrays.readDoubles(z, 0), HostArrays.readDoubles(a, 1), e, n);
      HostArrays.write(e, dz);
    }
  }
}
