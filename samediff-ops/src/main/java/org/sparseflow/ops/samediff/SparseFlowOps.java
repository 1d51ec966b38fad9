package org.sparseflow.ops.samediff;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SDIndex;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.imports.converters.ImportClassMapping;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Factories for SparseFlow SameDiff ops, and registration of all {@link JavaKernelOp}s with
 * SameDiff.
 */
public final class SparseFlowOps {

  private static final Logger LOG = LoggerFactory.getLogger(SparseFlowOps.class);
  private static volatile boolean registered;

  private SparseFlowOps() {}

  /**
   * Puts every {@link JavaKernelOp} found by ServiceLoader into {@code
   * ImportClassMapping.getOpNameMapping()} (by opName), so SameDiff re-creates them by name when it
   * clones a graph for gradients or loads one. Idempotent; called by the op classes and the
   * sparsifier. Call it before {@code SameDiff.load} of a graph holding SparseFlow ops in a JVM
   * that has not built one yet: it is not done at ND4J start-up, because initialising ND4J's op
   * registry prints two ND4J WARN lines ({@code Duplicate TF op mapping found for op Pow /
   * FloorMod}) in every program, DL4J-only ones included.
   *
   * @return the registered op names
   */
  public static synchronized List<String> registerAll() {
    List<String> names = new ArrayList<>();
    if (registered) {
      return names;
    }
    registered = true;
    try {
      Map<String, DifferentialFunction> mapping = ImportClassMapping.getOpNameMapping();
      for (JavaKernelOp op :
          ServiceLoader.load(JavaKernelOp.class, SparseFlowOps.class.getClassLoader())) {
        if (op instanceof DifferentialFunction) {
          mapping.putIfAbsent(op.opName(), (DifferentialFunction) op);
          names.add(op.opName());
        }
      }
      LOG.debug("Registered SparseFlow Java ops: {}", names);
    } catch (Throwable t) {
      registered = false;
      LOG.warn("Could not register SparseFlow Java ops: {}", t.toString());
    }
    return names;
  }

  /** Registers one op instance by its name (for op classes outside ServiceLoader). */
  public static void register(DifferentialFunction op) {
    ImportClassMapping.getOpNameMapping().putIfAbsent(op.opName(), op);
  }

  /**
   * y = x (W o M) with the mask stored as a constant 0/1 array in the graph (it travels with
   * sd.save()). Block masks use the block-sparse kernels; other masks the dense masked product.
   */
  public static SDVariable sparseMatmul(SameDiff sd, SDVariable x, SDVariable w, SparseMask mask) {
    return sparseMatmul(sd, null, x, w, mask, null, false);
  }

  /** Full form: optional output name, optional bias [nOut], dense weight gradient switch. */
  public static SDVariable sparseMatmul(
      SameDiff sd,
      String name,
      SDVariable x,
      SDVariable w,
      SparseMask mask,
      SDVariable bias,
      boolean denseWeightGrad) {
    if (mask == null) {
      throw new IllegalArgumentException("mask = null; a SparseMask matching w is required");
    }
    String maskName = sd.generateNewVarName((w.name() == null ? "w" : w.name()) + "_mask", 0);
    SDVariable m = sd.constant(maskName, mask.toDense(w.dataType()));
    return sparseMatmul(sd, name, x, w, m, mask.spec(), bias, denseWeightGrad);
  }

  /**
   * y = x (W o M) + bias with the mask given as a graph variable holding 0/1 values of W's shape
   * (the caller may update its array between iterations, e.g. for dynamic sparse training). For a
   * block pattern every b x b block of the mask must be all 0 or all 1.
   */
  public static SDVariable sparseMatmul(
      SameDiff sd,
      String name,
      SDVariable x,
      SDVariable w,
      SDVariable mask,
      PatternSpec pattern,
      SDVariable bias,
      boolean denseWeightGrad) {
    if (pattern == null) {
      throw new IllegalArgumentException(
          "pattern = null; allowed: a PatternSpec (unstructured, block8..64, n:m)");
    }
    pattern.validate();
    if (!Backends.javaKernelsRun()) {
      return denseMasked(sd, name, x, w, mask, bias);
    }
    int blockSize = pattern.getKind() == MaskPattern.Kind.BLOCK ? pattern.getBlockSize() : 0;
    SDVariable out =
        new SparseMatmulOp(sd, x, w, mask, bias, blockSize, denseWeightGrad).outputVariable();
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }

  /**
   * y = x W [+ bias] with W held as its kept blocks only ({@code packed} [kept b, b], the graph's
   * trainable weight; {@link PackedMatmulOp}); {@code name} (when not null) names the output. Needs
   * the backend that runs SparseFlow's Java ops.
   */
  public static SDVariable packedMatmul(
      SameDiff sd,
      String name,
      SDVariable x,
      SDVariable packed,
      PackedLayout layout,
      SDVariable bias) {
    if (layout == null) {
      throw new IllegalArgumentException("layout = null; allowed: a PackedLayout");
    }
    if (!Backends.javaKernelsRun()) {
      throw new IllegalStateException(
          "packed storage needs SparseFlow's Java ops, which this ND4J backend does not run;"
              + " allowed: the CPU backend, or storage: masked");
    }
    SDVariable out = new PackedMatmulOp(sd, x, packed, bias, layout).outputVariable();
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }

  /**
   * Causal block-sparse attention over [batch, heads, T, headDim]; delegates to {@link
   * SparseAttentionOps#sparseAttention(SameDiff, SDVariable, SDVariable, SDVariable,
   * org.sparseflow.ops.attention.AttentionPattern, int)} (owned by the attention kernels).
   */
  public static SDVariable sparseAttention(
      SameDiff sd,
      SDVariable q,
      SDVariable k,
      SDVariable v,
      AttentionPattern pattern,
      int blockSize) {
    return SparseAttentionOps.sparseAttention(sd, q, k, v, pattern, blockSize);
  }

  /**
   * The same product as ND4J ops, {@code x (W o M) + bias}, for backends whose executioner cannot
   * run SparseFlow's Java ops (CUDA, or SparseFlow's backend switched off). The weight gradient is
   * masked, as with the sparse op's default.
   */
  private static SDVariable denseMasked(
      SameDiff sd, String name, SDVariable x, SDVariable w, SDVariable mask, SDVariable bias) {
    Backends.announceDenseFallback(
        "the ND4J op executioner "
            + Nd4j.getExecutioner().getClass().getSimpleName()
            + " does not run SparseFlow's Java ops");
    SDVariable wm = w.mul(mask);
    long[] xs = x.getShape();
    SDVariable out;
    if (xs == null || xs.length == 2) {
      out = x.mmul(wm);
    } else {
      // [..., nIn] -> [rows, nIn] x [nIn, nOut] -> [..., nOut]
      SDVariable shape = sd.shape(x);
      SDVariable lead = shape.get(SDIndex.interval(0, xs.length - 1));
      SDVariable nOut = sd.shape(w).get(SDIndex.interval(1, 2));
      out = x.reshape(-1, xs[xs.length - 1]).mmul(wm).reshape(sd.concat(0, lead, nOut));
    }
    if (bias != null) {
      out = out.add(bias);
    }
    return name == null ? out : sd.updateVariableNameAndReference(out, name);
  }

  /** Block size of a mask for the op (0 = not block-structured). */
  static int blockSizeOf(SparseMask mask) {
    return mask instanceof BlockMask ? ((BlockMask) mask).blockSize() : 0;
  }
}
