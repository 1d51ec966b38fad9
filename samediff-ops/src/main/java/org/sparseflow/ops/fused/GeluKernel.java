package org.sparseflow.ops.fused;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.transforms.strict.GELU;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * GELU on ND4J arrays: the Vector API kernels over the buffers when they apply (FLOAT,
 * 'c'-contiguous, the vector module present), else ND4J's transform (forward) and {@link GeluMath}
 * over Java copies (backward).
 */
public final class GeluKernel {
  private GeluKernel() {}

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

  /**
   * y = gelu(z): the Vector API kernel for FLOAT when it applies, else ND4J's GELU transform (the
   * exact ND4J values, e.g. for DOUBLE gradient checks).
   */
  public static void forward(INDArray z, INDArray y) {
    if (vectorApplies(z, y)) {
      GeluVectorKernel.forward(z, y);
    } else {
      Nd4j.getExecutioner().exec(new GELU(z, y));
    }
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
