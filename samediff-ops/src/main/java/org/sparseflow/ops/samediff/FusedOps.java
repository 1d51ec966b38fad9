package org.sparseflow.ops.samediff;

import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.backend.Backends;

/**
 * Factories for the fused SameDiff ops ({@link FusedLayerNormOp}, {@link FusedGeluOp}). On a
 * backend whose executioner cannot run SparseFlow's Java ops (CUDA, or SparseFlow's backend
 * switched off) they build the same function from stock ND4J ops.
 */
public final class FusedOps {
  private FusedOps() {}

  /**
   * Layer normalisation of {@code x} over its last axis with gain {@code g} and bias {@code b}
   * (both of the last dimension's size): {@code g o (x - mean) / sqrt(var + eps) + b}. {@code eps =
   * 0} matches ND4J's {@code layer_norm}; {@code name} may be null.
   */
  public static SDVariable layerNorm(
      SameDiff sd, String name, SDVariable x, SDVariable g, SDVariable b, double eps) {
    long[] shape = x == null ? null : x.getShape();
    return layerNorm(sd, name, x, g, b, eps, shape == null ? -1 : shape.length - 1);
  }

  /**
   * As above with the index of x's last axis given ({@code -1}: unknown), for graphs whose x has no
   * static shape.
   */
  public static SDVariable layerNorm(
      SameDiff sd, String name, SDVariable x, SDVariable g, SDVariable b, double eps, int axis) {
    if (sd == null || x == null || g == null || b == null) {
      throw new IllegalArgumentException(
          "sd, x, g and b must be non-null; got sd=" + sd + " x=" + x + " g=" + g + " b=" + b);
    }
    FusedLayerNormOp.checkEps(eps);
    SDVariable out;
    if (Backends.javaKernelsRun()) {
      out = new FusedLayerNormOp(sd, x, g, b, eps, axis).outputVariable();
    } else {
      announceFallback();
      if (eps == 0.0 && axis >= 0) {
        out = sd.nn().layerNorm(x, g, b, false, axis);
      } else {
        SDVariable centred = x.sub(x.mean(true, -1));
        SDVariable var = centred.mul(centred).mean(true, -1);
        out = centred.div(sd.math().sqrt(var.add(eps))).mul(g).add(b);
      }
    }
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }

  /** {@code gelu(z) = z sigmoid(1.702 z)}, ND4J's {@code gelu}; {@code name} may be null. */
  public static SDVariable gelu(SameDiff sd, String name, SDVariable z) {
    if (sd == null || z == null) {
      throw new IllegalArgumentException("sd and z must be non-null; got sd=" + sd + " z=" + z);
    }
    SDVariable out;
    if (Backends.javaKernelsRun()) {
      out = new FusedGeluOp(sd, z).outputVariable();
    } else {
      announceFallback();
      out = sd.nn().gelu(z);
    }
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }

  private static void announceFallback() {
    Backends.announceDenseFallback(
        "the ND4J op executioner "
            + Nd4j.getExecutioner().getClass().getSimpleName()
            + " does not run SparseFlow's Java ops");
  }
}
