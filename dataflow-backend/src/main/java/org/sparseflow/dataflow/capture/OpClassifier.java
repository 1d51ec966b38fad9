package org.sparseflow.dataflow.capture;

import java.util.Locale;
import java.util.Set;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;

/** Maps ND4J / SameDiff op names to {@link OpKind}s and FLOP estimates from shapes. */
public final class OpClassifier {
  private static final Set<String> LAYOUT =
      Set.of(
          "reshape",
          "permute",
          "transpose",
          "concat",
          "split",
          "split_v",
          "stack",
          "unstack",
          "slice",
          "strided_slice",
          "expand_dims",
          "squeeze",
          "tile",
          "repeat",
          "pad",
          "flatten",
          "identity",
          "shape_of",
          "onehot",
          "create",
          "fill",
          "zeros_as",
          "ones_as",
          "zeroslike",
          "oneslike",
          "dup",
          "cast",
          "gather_nd");
  private static final Set<String> ACTIVATION =
      Set.of(
          "relu",
          "gelu",
          "precise_gelu",
          "tanh",
          "sigmoid",
          "softplus",
          "elu",
          "leakyrelu",
          "swish",
          "relu6",
          "selu",
          "hardtanh",
          "hardsigmoid",
          "softsign",
          "mish",
          "cube",
          "rationaltanh",
          "rectifiedtanh");
  private static final Set<String> NORM =
      Set.of("layer_norm", "batchnorm", "standardize", "lrn", "normalize_moments");

  private OpClassifier() {}

  public static OpKind kind(String opName, int maxInputRank) {
    String n = opName.toLowerCase(Locale.ROOT);
    String base = n.endsWith("_bp") ? n.substring(0, n.length() - 3) : n;
    if (base.startsWith("sparseflow_sparse_matmul")) {
      return OpKind.SPARSE_LINEAR;
    }
    if (base.startsWith("sparseflow_sparse_attention")) {
      return OpKind.BATCHED_MATMUL;
    }
    if (base.equals("matmul")
        || base.equals("mmul")
        || base.equals("gemm")
        || base.equals("batched_gemm")
        || base.equals("tensordot")
        || base.equals("tensormmul")
        || base.equals("xw_plus_b")) {
      return maxInputRank > 2 ? OpKind.BATCHED_MATMUL : OpKind.LINEAR;
    }
    if (base.contains("updater")
        || base.equals("adam")
        || base.equals("sgd")
        || base.equals("nesterovs")) {
      return OpKind.OPTIMIZER;
    }
    if (base.contains("cross_entropy") || base.contains("loss") || base.equals("mcxent")) {
      return OpKind.LOSS;
    }
    if (base.equals("softmax") || base.equals("log_softmax")) {
      return OpKind.SOFTMAX;
    }
    if (NORM.contains(base)) {
      return OpKind.NORM;
    }
    if (ACTIVATION.contains(base)) {
      return OpKind.ACTIVATION;
    }
    if (base.startsWith("reduce_")
        || base.equals("sum")
        || base.equals("mean")
        || base.equals("max")
        || base.equals("min")
        || base.equals("norm1")
        || base.equals("norm2")
        || base.equals("variance")
        || base.equals("std")
        || base.startsWith("arg")
        || base.equals("countnonzero")
        || base.equals("amax")
        || base.equals("amin")) {
      return OpKind.REDUCTION;
    }
    if (base.equals("gather") || base.startsWith("scatter") || base.startsWith("embedding")) {
      return OpKind.GATHER;
    }
    if (LAYOUT.contains(base)) {
      return OpKind.LAYOUT;
    }
    if (base.contains("add")
        || base.contains("sub")
        || base.contains("mul")
        || base.contains("div")
        || base.startsWith("broadcast")
        || base.contains("assign")
        || base.equals("pow")
        || base.equals("exp")
        || base.equals("log")
        || base.equals("sqrt")
        || base.equals("rsqrt")
        || base.equals("square")
        || base.equals("neg")
        || base.equals("abs")
        || base.equals("dropout")
        || base.equals("dropout_inverted")
        || base.startsWith("scalar")
        || base.equals("where")
        || base.equals("select")
        || base.equals("maximum")
        || base.equals("minimum")
        || base.equals("biasadd")
        || base.equals("axpy")) {
      return OpKind.ELEMENTWISE;
    }
    return OpKind.OTHER;
  }

  public static Phase phase(String opName, OpKind kind) {
    if (kind == OpKind.OPTIMIZER) {
      return Phase.OPTIMIZER;
    }
    return opName.toLowerCase(Locale.ROOT).endsWith("_bp") ? Phase.BACKWARD : Phase.FORWARD;
  }

  static long length(long[] s) {
    long n = 1;
    for (long d : s) {
      n *= d;
    }
    return n;
  }

  /**
   * FLOPs from shapes. Matmuls: the contraction size K is recovered transpose-agnostically from
   * len(a) * len(b) / (len(out) * batch) = K^2 (batch = leading dims of the output beyond the last
   * two).
   */
  public static double flops(
      OpKind kind, String opName, long[][] in, long[][] out, double density) {
    long outLen = out.length > 0 ? length(out[0]) : 0;
    long inLen = in.length > 0 ? length(in[0]) : 0;
    boolean bp = opName.toLowerCase(Locale.ROOT).endsWith("_bp");
    switch (kind) {
      case LINEAR:
      case SPARSE_LINEAR:
      case BATCHED_MATMUL:
        {
          if (in.length < 2) {
            return 0;
          }
          long[] ref = bp && in.length >= 3 ? in[in.length - 1] : (out.length > 0 ? out[0] : in[0]);
          // for sparse matmul bp the incoming gradient is the last input
          double refLen = length(ref);
          double batch = 1;
          for (int i = 0; i < ref.length - 2; i++) {
            batch *= ref[i];
          }
          double k2 = (double) length(in[0]) * length(in[1]) / Math.max(1, refLen * batch);
          double k = Math.sqrt(Math.max(0, k2));
          double f = 2.0 * refLen * k * (kind == OpKind.SPARSE_LINEAR ? density : 1.0);
          return bp ? 2 * f : f;
        }
      case ELEMENTWISE:
        return outLen;
      case ACTIVATION:
        return 4.0 * outLen;
      case SOFTMAX:
        return 5.0 * outLen;
      case NORM:
        return 8.0 * Math.max(outLen, inLen);
      case REDUCTION:
        return inLen;
      case LOSS:
        return 5.0 * inLen;
      case OPTIMIZER:
        return 12.0 * inLen * density;
      case GATHER:
      case LAYOUT:
        return 0;
      default:
        return outLen;
    }
  }
}
