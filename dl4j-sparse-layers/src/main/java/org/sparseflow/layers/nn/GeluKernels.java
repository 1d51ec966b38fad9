package org.sparseflow.layers.nn;

import java.util.Arrays;
import org.nd4j.linalg.activations.IActivation;
import org.nd4j.linalg.activations.impl.ActivationGELU;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.transforms.strict.GELU;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;
import org.sparseflow.ops.fused.GeluMath;

/**
 * DL4J's default GELU, {@code gelu(z) = z * sigmoid(1.702 z)} ({@link ActivationGELU} with precise
 * = false; the sigmoid approximation of Hendrycks and Gimpel, arXiv 1606.08415, section 2), with a
 * backward pass that needs no transcendental function: with {@code s = sigmoid(1.702 z) = gelu(z) /
 * z} recovered from the kept forward output, {@code gelu'(z) = s + 1.702 z s (1 - s)} (the loops
 * are {@link GeluMath}'s, shared with the fused SameDiff GELU op).
 *
 * <p>Why: ND4J's GELU derivative op evaluates {@code exp} through {@code pow} for every element and
 * then multiplies by the incoming gradient in a second pass; on the gpt-mini block-sparse step that
 * was ~10% of the step time. Here the backward pass is one fused loop over z, gelu(z) and the
 * gradient, which also sums the bias gradient. The forward pass stays ND4J's GELU op (its sigmoid
 * op is slower).
 */
final class GeluKernels {
  private GeluKernels() {}

  /** True for the activation these kernels compute (DL4J's non-precise GELU). */
  static boolean supports(IActivation fn, DataType dt) {
    return fn instanceof ActivationGELU g
        && !g.isPrecise()
        && (dt == DataType.FLOAT || dt == DataType.DOUBLE);
  }

  /** gelu(z) as a new array in z's order (current workspace); z is left as it is. */
  static INDArray forward(INDArray z) {
    INDArray a = Nd4j.createUninitialized(z.dataType(), z.shape(), z.ordering());
    Nd4j.getExecutioner().exec(new GELU(z, a));
    return a;
  }

  /**
   * dL/dz = eps * (s + 1.702 z s (1 - s)) as a new [N, n] array in z's order, with s from {@code a
   * = gelu(z)}; when {@code columnSums} is non-null (length n) it receives the column sums of dL/dz
   * (a bias gradient).
   */
  static INDArray backward(INDArray z, INDArray a, INDArray eps, double[] columnSums) {
    char order = z.ordering();
    INDArray zc = contiguous(z, order),
        sc = contiguous(a, order),
        ec = contiguous(eps.castTo(z.dataType()), order);
    INDArray out = Nd4j.createUninitialized(z.dataType(), z.shape(), order);
    int n = (int) z.length();
    long za = NativeAddress.of(zc),
        sa = NativeAddress.of(sc),
        ea = NativeAddress.of(ec),
        oa = NativeAddress.of(out);
    if (z.dataType() == DataType.DOUBLE) {
      double[] zv = new double[n], sv = new double[n], ev = new double[n];
      RawPointers.doubleAt(0, za).get(zv, 0, n);
      RawPointers.doubleAt(0, sa).get(sv, 0, n);
      RawPointers.doubleAt(0, ea).get(ev, 0, n);
      GeluMath.backward(zv, sv, ev, n);
      RawPointers.doubleAt(0, oa).put(ev, 0, n);
      if (columnSums != null) {
        sumColumns(ev, null, z, order, columnSums);
      }
    } else {
      float[][] buf = BUFFERS.get();
      if (buf[0].length < n) {
        buf[0] = new float[n];
        buf[1] = new float[n];
        buf[2] = new float[n];
      }
      float[] zv = buf[0], sv = buf[1], ev = buf[2];
      RawPointers.floatAt(0, za).get(zv, 0, n);
      RawPointers.floatAt(0, sa).get(sv, 0, n);
      RawPointers.floatAt(0, ea).get(ev, 0, n);
      GeluMath.backward(zv, sv, ev, n);
      RawPointers.floatAt(0, oa).put(ev, 0, n);
      if (columnSums != null) {
        sumColumns(null, ev, z, order, columnSums);
      }
    }
    return out;
  }

  /** Column sums of a contiguous [N, n] matrix held as doubles or floats in {@code order}. */
  private static void sumColumns(double[] d, float[] f, INDArray shape, char order, double[] out) {
    int rows = (int) shape.size(0), cols = (int) shape.size(1);
    Arrays.fill(out, 0.0);
    if (order == 'c') {
      for (int r = 0; r < rows; r++) {
        int o = r * cols;
        if (d != null) {
          for (int c = 0; c < cols; c++) {
            out[c] += d[o + c];
          }
        } else {
          for (int c = 0; c < cols; c++) {
            out[c] += f[o + c];
          }
        }
      }
    } else {
      for (int c = 0; c < cols; c++) {
        int o = c * rows;
        double s = 0;
        for (int r = 0; r < rows; r++) {
          s += d != null ? d[o + r] : f[o + r];
        }
        out[c] = s;
      }
    }
  }

  // per-thread scratch for the float path (4 MB each at gpt-mini size: fresh arrays would be
  // humongous G1 allocations)
  private static final ThreadLocal<float[][]> BUFFERS =
      ThreadLocal.withInitial(() -> new float[3][0]);

  /** {@code a} itself when its elements are contiguous in {@code order}, else a copy that is. */
  private static INDArray contiguous(INDArray a, char order) {
    return a.ordering() == order && a.elementWiseStride() == 1 ? a : a.dup(order);
  }
}
