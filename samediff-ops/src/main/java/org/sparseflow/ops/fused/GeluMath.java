package org.sparseflow.ops.fused;

/**
 * The GELU of DL4J's default activation and ND4J's {@code gelu} op, {@code gelu(z) = z *
 * sigmoid(1.702 z)} (the sigmoid approximation of Hendrycks and Gimpel, arXiv 1606.08415, section
 * 2), backward without a transcendental function: with {@code s = sigmoid(1.702 z) = gelu(z) / z}
 * recovered from the forward output, {@code gelu'(z) = s + 1.702 z s (1 - s)}. Shared by the DL4J
 * sparse dense layer and the fused SameDiff GELU op.
 */
public final class GeluMath {
  /** libnd4j's GELU and GELU-derivative ops use the float constant 1.702f in both precisions. */
  public static final double K = 1.702f;

  private GeluMath() {}

  /** dL/dz in place of {@code eps}: eps[i] *= gelu'(z[i]), with s from {@code a = gelu(z)}. */
  public static void backward(double[] z, double[] a, double[] eps, int n) {
    for (int i = 0; i < n; i++) {
      double zi = z[i];
      double si = zi != 0.0 ? a[i] / zi : 0.5;
      eps[i] *= si + K * zi * si * (1.0 - si);
    }
  }

  /** Float version of {@link #backward(double[], double[], double[], int)}. */
  public static void backward(float[] z, float[] a, float[] eps, int n) {
    final float k = (float) K;
    for (int i = 0; i < n; i++) {
      float zi = z[i];
      float si = zi != 0f ? a[i] / zi : 0.5f;
      eps[i] *= si + k * zi * si * (1.0f - si);
    }
  }
}
