package org.sparseflow.layers.samediff;

import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.samediff.LinearOps.Use;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * {@code storage: packed} for a SameDiff weight: the weight variable W is replaced by a variable
 * {@code <W>_packed} holding only its kept blocks ([kept b, b], in x·W orientation: a weight used
 * as x·Wᵀ is packed transposed), and every use becomes a {@link
 * org.sparseflow.ops.samediff.PackedMatmulOp}. W and its array leave the graph, so the updater's
 * state, the gradients and the saved graph hold the kept blocks only. The block set is fixed.
 */
final class PackedMatmulRewriter {
  private PackedMatmulRewriter() {}

  /**
   * Why {@code w}'s uses cannot run on packed storage, or null when they can: block patterns only,
   * every use linear (no tied lookup), and all uses in one orientation.
   */
  static String blocker(PatternSpec spec, List<Use> uses) {
    if (spec.getKind() != MaskPattern.Kind.BLOCK) {
      return "packed SameDiff matmuls take block patterns; " + spec + " runs masked";
    }
    for (Use u : uses) {
      if (!u.linear()) {
        return "a " + u.kind() + " use (" + u.describe() + ") reads the dense W";
      }
      if (u.transB() != uses.get(0).transB()) {
        return "W is used both as W and as Wᵀ";
      }
    }
    return null;
  }

  /** Rewrites every use of {@code w} (already zero outside {@code dense01}) onto packed storage. */
  static void apply(SameDiff sd, String w, List<Use> uses, INDArray dense01, PatternSpec spec) {
    boolean trans = uses.get(0).transB();
    INDArray warr = sd.getArrForVarName(w);
    INDArray values = trans ? warr.transpose() : warr;
    INDArray mask = trans ? dense01.transpose() : dense01;
    PackedLayout layout =
        PackedLayout.of((BlockMask) PatternSpec.block(spec.getBlockSize()).fromDense(mask));
    SDVariable packed =
        sd.var(sd.generateNewVarName(w + "_packed", 0), PackedBlockLinear.pack(values, layout));
    for (Use u : uses) {
      MatmulRewriter.replaceLinearUse(
          sd, u, (name, x, bias) -> SparseFlowOps.packedMatmul(sd, name, x, packed, layout, bias));
    }
    sd.getVariables().remove(w);
    sd.getVariablesArrays().removeArray(w);
  }
}
