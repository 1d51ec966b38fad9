package org.sparseflow.mst;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.shape.Transpose;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.samediff.SparseAttentionBpOp;
import org.sparseflow.ops.samediff.SparseAttentionOp;
import org.sparseflow.ops.samediff.SparseMatmulBpOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * The SparseFlow ops of a SameDiff graph rewritten by {@code Sparsify.apply} (sparse matmuls with a
 * 0/1 mask constant, sparse attention), as MST drives them: the mask arrays and cached block
 * layouts of each weight, the dense weight gradient switch of the backward ops, and the attention
 * pattern of each attention layer. SameDiff trains a clone of the graph (its gradient function),
 * whose op instances differ from the graph's; every setting is pushed to the instances of both, and
 * again whenever a new gradient function appears ({@link #refresh}).
 */
final class SameDiffSparseOps {

  /** SameDiff's name for the gradient function of a graph. */
  static final String GRAD_FUNCTION = "grad";

  private final SameDiff graph;

  /** weight -> its mask constant (input 2 of the sparse matmuls). */
  private final Map<String, String> maskVars = new LinkedHashMap<>();

  /** weight -> the op's block size (0: element-wise mask). */
  private final Map<String, Integer> blockSizes = new LinkedHashMap<>();

  /** forward attention op names, in graph order: index = attention layer. */
  private final List<String> attentionOps = new ArrayList<>();

  private final Map<String, BlockMask> layouts = new LinkedHashMap<>();
  private final Map<Integer, AttentionPattern> patterns = new LinkedHashMap<>();
  private boolean denseWeightGrad;
  private SameDiff gradFunction;

  private SameDiffSparseOps(SameDiff graph) {
    this.graph = graph;
    for (SameDiffOp op : graph.getOps().values()) {
      DifferentialFunction f = op.getOp();
      if (f instanceof SparseMatmulOp m) {
        String w = op.getInputsToOp().get(1);
        String mask = op.getInputsToOp().get(2);
        // x·Wᵀ is rewritten as a sparse matmul of transpose(W) with transpose(<W>_mask): MST
        // drives W and its mask constant (both of W's shape); the op reads the transposed mask
        // on every call (no cached layout, which would be in W's orientation)
        String tw = transposed(graph, w), tm = transposed(graph, mask);
        if (tw != null && tm != null) {
          w = tw;
          mask = tm;
        }
        String prev = maskVars.putIfAbsent(w, mask);
        if (prev != null && !prev.equals(mask)) {
          throw new IllegalArgumentException(
              "weight '"
                  + w
                  + "' is used by sparse matmuls with two masks ('"
                  + prev
                  + "', '"
                  + mask
                  + "'); MST needs one mask per weight");
        }
        blockSizes.put(w, m.blockSize());
      } else if (f instanceof SparseAttentionOp) {
        attentionOps.add(op.getName());
      }
    }
  }

  /** The SparseFlow ops of {@code graph} (none when it was not rewritten). */
  static SameDiffSparseOps of(SameDiff graph) {
    return new SameDiffSparseOps(graph);
  }

  boolean isEmpty() {
    return maskVars.isEmpty() && attentionOps.isEmpty();
  }

  /** Whether {@code weight} is the weight of a sparse matmul. */
  boolean hasWeight(String weight) {
    return maskVars.containsKey(weight);
  }

  int attentionLayers() {
    return attentionOps.size();
  }

  /**
   * Checks that MST's mask of {@code weight} can drive its op: a block op needs MST masks of the
   * same block size (an element-wise op takes any mask).
   */
  void checkPattern(String weight, MaskPattern pattern) {
    int b = blockSizes.get(weight);
    if (b > 0 && (pattern.kind() != MaskPattern.Kind.BLOCK || pattern.blockSize() != b)) {
      throw new IllegalArgumentException(
          "MST config: field 'pattern' is "
              + pattern
              + " but weight '"
              + weight
              + "' runs a block"
              + b
              + " sparse matmul; allowed: block"
              + b
              + " (or rewrite the graph with the MST pattern)");
    }
  }

  /**
   * Sets the mask of {@code weight}: its mask constant (in the graph and the gradient function)
   * and, for block ops, the cached block layout of every op using it.
   */
  void setMask(String weight, LayerMask mask, INDArray dense01) {
    for (SameDiff sd : instances()) {
      INDArray a = sd.getArrForVarName(maskVars.get(weight));
      if (a != null) {
        a.assign(dense01);
      }
    }
    int b = blockSizes.get(weight);
    if (b > 0) {
      boolean[] flags = new boolean[mask.unitCount()];
      for (int u = 0; u < flags.length; u++) {
        flags[u] = mask.isUnitActive(u);
      }
      layouts.put(weight, BlockMask.of(mask.rows(), mask.cols(), b, flags));
    }
    push();
  }

  /** The cached layout MST set for {@code weight} (null for element-wise ops). */
  BlockMask layout(String weight) {
    return layouts.get(weight);
  }

  /** Switches the dense weight gradient of every sparse matmul's backward op. */
  void setDenseWeightGrad(boolean on) {
    if (on != denseWeightGrad) {
      denseWeightGrad = on;
      push();
    }
  }

  boolean denseWeightGrad() {
    return denseWeightGrad;
  }

  /** Sets the attention pattern of attention layer {@code layer}. */
  void setPattern(int layer, String pattern) {
    if (layer < 0 || layer >= attentionOps.size()) {
      throw new IllegalArgumentException(
          "layer="
              + layer
              + " is out of range; allowed: 0.."
              + (attentionOps.size() - 1)
              + " (the graph has "
              + attentionOps.size()
              + " sparse attention ops)");
    }
    patterns.put(layer, AttentionPattern.parse(pattern));
    push();
  }

  /**
   * Picks up a gradient function SameDiff created since the last call and pushes the current
   * settings to its ops.
   */
  void refresh() {
    SameDiff g = graph.getFunction(GRAD_FUNCTION);
    if (g != gradFunction) {
      gradFunction = g;
      push();
    }
  }

  private List<SameDiff> instances() {
    List<SameDiff> out = new ArrayList<>();
    out.add(graph);
    SameDiff g = graph.getFunction(GRAD_FUNCTION);
    if (g != null && g != graph) {
      out.add(g);
    }
    return out;
  }

  /** Applies the current settings to every op instance of the graph and its gradient function. */
  private void push() {
    for (SameDiff sd : instances()) {
      Map<String, Integer> layerOfQuery = new LinkedHashMap<>();
      for (int i = 0; i < attentionOps.size(); i++) {
        SameDiffOp op = sd.getOps().get(attentionOps.get(i));
        if (op != null) {
          layerOfQuery.put(op.getInputsToOp().get(0), i);
        }
      }
      for (SameDiffOp op : sd.getOps().values()) {
        DifferentialFunction f = op.getOp();
        if (f instanceof SparseMatmulOp m) {
          m.setBlockLayout(layouts.get(op.getInputsToOp().get(1)));
        } else if (f instanceof SparseMatmulBpOp bp) {
          bp.setBlockLayout(layouts.get(op.getInputsToOp().get(1)));
          bp.setDenseWeightGrad(denseWeightGrad);
        } else if (f instanceof SparseAttentionOp a) {
          AttentionPattern p = patterns.get(attentionOps.indexOf(op.getName()));
          if (p != null) {
            a.setPattern(p);
          }
        } else if (f instanceof SparseAttentionBpOp a) {
          Integer layer = layerOfQuery.get(op.getInputsToOp().get(0));
          AttentionPattern p = layer == null ? null : patterns.get(layer);
          if (p != null) {
            a.setPattern(p);
          }
        }
      }
    }
  }

  /** The input of the transpose op producing {@code var}, or null. */
  private static String transposed(SameDiff sd, String var) {
    Variable v = sd.getVariables().get(var);
    SameDiffOp p =
        v == null || v.getOutputOfOp() == null ? null : sd.getOps().get(v.getOutputOfOp());
    return p != null && p.getOp() instanceof Transpose ? p.getInputsToOp().get(0) : null;
  }
}
