package org.sparseflow.ops.packed;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * y = x W + b for an N:M-sparse W held only as its packed kept values and 2- to 8-bit offsets (see
 * {@link PackedNmLayout}), with the backward pass writing dW for the kept weights only. No dense
 * [rows, cols] weight array is created; work and weight-sized memory follow n / m.
 *
 * <p>The kernels run on transposed activations (x^T, dy^T): one copy of each activation per call,
 * activation-sized, never weight-sized. fp32 values and activations run on the Vector API loops of
 * {@link PackedNmVector} when the {@code jdk.incubator.vector} module is present; everything else
 * (double, other floating types, no Vector API) runs on the double loops of {@link PackedNmKernels}
 * and is cast back.
 */
public final class PackedNmLinear {
  private PackedNmLinear() {}

  /** Packs the kept weights of a dense W [rows, cols] into a new [rows / m * n, cols] array. */
  public static INDArray pack(INDArray dense, PackedNmLayout layout) {
    checkLayout(layout);
    return PackedOperands.pack(dense, layout, p -> packInto(dense, layout, p));
  }

  /** Writes the kept weights of dense W [rows, cols] into {@code packed} (matrix or flat). */
  public static void packInto(INDArray dense, PackedNmLayout layout, INDArray packed) {
    checkLayout(layout);
    INDArray p = PackedOperands.packOperands(dense, packed, layout);
    double[] d = PackedOperands.doubles(dense);
    int cols = (int) layout.cols();
    double[] out = new double[(int) layout.packedLength()];
    for (int pr = 0; pr < layout.packedRows(); pr++) {
      for (int c = 0; c < cols; c++) {
        out[pr * cols + c] = d[layout.rowOf(pr, c) * cols + c];
      }
    }
    p.assign(Nd4j.createFromArray(out).reshape('c', p.shape()));
  }

  /** The dense W [rows, cols] ('c') of packed values: kept weights filled in, zeros elsewhere. */
  public static INDArray unpack(INDArray packed, PackedNmLayout layout) {
    checkLayout(layout);
    INDArray p = PackedOperands.asMatrix("packed", packed, layout);
    double[] v = PackedOperands.doubles(p);
    int cols = (int) layout.cols();
    double[] d = new double[(int) (layout.rows() * cols)];
    for (int pr = 0; pr < layout.packedRows(); pr++) {
      for (int c = 0; c < cols; c++) {
        d[layout.rowOf(pr, c) * cols + c] = v[pr * cols + c];
      }
    }
    return Nd4j.createFromArray(d)
        .reshape('c', layout.rows(), layout.cols())
        .castTo(packed.dataType());
  }

  /**
   * y = x W + bias, x [N, rows] (any order, views too), packed [rows / m * n, cols] (or flat), bias
   * of length cols or null; returns y [N, cols] row-major in the packed values' data type.
   */
  public static INDArray forward(
      INDArray x, INDArray packed, INDArray bias, PackedNmLayout layout) {
    checkLayout(layout);
    INDArray p = PackedOperands.forwardOperands(x, packed, bias, layout);
    int ns = (int) x.size(0);
    int cols = (int) layout.cols();
    INDArray yT;
    if (vector(p, x)) {
      float[] y = new float[ns * cols];
      PackedNmVector.forward(transposedFloats(x), PackedOperands.floats(p), y, ns, layout);
      yT = Nd4j.createFromArray(y);
    } else {
      double[] y = new double[ns * cols];
      PackedNmKernels.forward(transposedDoubles(x), PackedOperands.doubles(p), y, ns, layout);
      yT = Nd4j.createFromArray(y);
    }
    INDArray y = untranspose(yT, cols, ns, p.dataType());
    return PackedOperands.addBias(y, bias);
  }

  /**
   * Backward of {@link #forward}: writes dW of the kept weights into {@code dPackedOut} (same
   * length as the packed values) and returns dx [N, rows] (row-major), or null when {@code
   * inputGrad} is false. The bias gradient is the column sum of dy and is left to the caller.
   */
  public static INDArray backward(
      INDArray x,
      INDArray packed,
      PackedNmLayout layout,
      INDArray dy,
      INDArray dPackedOut,
      boolean inputGrad) {
    checkLayout(layout);
    INDArray[] operands = PackedOperands.backwardOperands(x, packed, dy, dPackedOut, layout);
    INDArray p = operands[0];
    INDArray dp = operands[1];
    int ns = (int) x.size(0);
    int rows = (int) layout.rows();
    int len = (int) layout.packedLength();
    INDArray dv;
    INDArray dxT = null;
    if (vector(p, x, dy)) {
      float[] dyT = transposedFloats(dy);
      float[] dvA = new float[len];
      PackedNmVector.weightGrad(transposedFloats(x), dyT, dvA, ns, layout);
      dv = Nd4j.createFromArray(dvA);
      if (inputGrad) {
        float[] dx = new float[ns * rows];
        PackedNmVector.inputGrad(dyT, PackedOperands.floats(p), dx, ns, layout);
        dxT = Nd4j.createFromArray(dx);
      }
    } else {
      double[] dyT = transposedDoubles(dy);
      double[] dvA = new double[len];
      PackedNmKernels.weightGrad(transposedDoubles(x), dyT, dvA, ns, layout);
      dv = Nd4j.createFromArray(dvA);
      if (inputGrad) {
        double[] dx = new double[ns * rows];
        PackedNmKernels.inputGrad(dyT, PackedOperands.doubles(p), dx, ns, layout);
        dxT = Nd4j.createFromArray(dx);
      }
    }
    dp.assign(dv.reshape('c', dp.shape()));
    PackedOperands.release(dv);
    return dxT == null ? null : untranspose(dxT, rows, ns, p.dataType());
  }

  /** Whether the Vector API loops serve this call: fp32 values and activations. */
  private static boolean vector(INDArray p, INDArray... activations) {
    if (!VectorSupport.AVAILABLE || p.dataType() != DataType.FLOAT) {
      return false;
    }
    for (INDArray a : activations) {
      if (a.dataType() != DataType.FLOAT) {
        return false;
      }
    }
    return true;
  }

  /**
   * [N, k] row-major from a flat [k, N] row-major transposed result, in {@code type}, created in
   * the caller's workspace (DL4J checks that layer outputs and input gradients live there).
   */
  private static INDArray untranspose(INDArray flatT, int k, int ns, DataType type) {
    INDArray t = flatT.reshape('c', k, ns).transpose();
    INDArray out = t.dataType() == type ? t.dup('c') : t.castTo(type).dup('c');
    PackedOperands.release(flatT);
    return out;
  }

  private static float[] transposedFloats(INDArray a) {
    return PackedOperands.floats(a.transpose());
  }

  private static double[] transposedDoubles(INDArray a) {
    return PackedOperands.doubles(a.transpose());
  }

  private static void checkLayout(PackedNmLayout layout) {
    PackedOperands.checkLayout(layout, "PackedNmLayout");
  }
}
