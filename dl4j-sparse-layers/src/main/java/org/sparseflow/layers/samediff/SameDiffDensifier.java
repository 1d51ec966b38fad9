package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.impl.shape.Transpose;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.samediff.FusedGeluOp;
import org.sparseflow.ops.samediff.FusedLayerNormOp;
import org.sparseflow.ops.samediff.PackedMatmulOp;
import org.sparseflow.ops.samediff.SparseAttentionOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * {@link SameDiffSparsifier#densify}: replaces the SparseFlow ops of a rewritten graph, in place,
 * by stock ops with identical outputs (fused layer-norm / GELU ops by ND4J's {@code layer_norm} /
 * {@code gelu}).
 */
final class SameDiffDensifier {
  private SameDiffDensifier() {}

  /**
   * Replaces every sparse matmul by a plain matmul of its (already zero-filled) weight, and every
   * sparse attention op by stock ops computing {@code softmax(scale Q K^T + bias) V} with a
   * constant additive mask (0 where the op's layout computes a pair, -1e9 elsewhere) so that the
   * result needs no SparseFlow op.
   *
   * @param seqLen sequence length T of the attention inputs; {@code <= 0} reads it from the static
   *     shape of Q
   */
  static void densify(SameDiff sd, int seqLen) {
    Map<String, SDVariable> unpacked = new HashMap<>();
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      if (op.getOp() instanceof SparseMatmulOp) {
        densifyMatmul(sd, op);
      } else if (op.getOp() instanceof PackedMatmulOp packed) {
        densifyPacked(sd, op, packed, unpacked);
      } else if (op.getOp() instanceof FusedLayerNormOp ln) {
        densifyLayerNorm(sd, op, ln);
      } else if (op.getOp() instanceof FusedGeluOp) {
        densifyGelu(sd, op);
      } else if (op.getOp() instanceof SparseAttentionOp attention) {
        densifyAttention(sd, op, attention, seqLen);
      }
    }
    for (String packedName : unpacked.keySet()) {
      sd.getVariables().remove(packedName);
      sd.getVariablesArrays().removeArray(packedName);
    }
    GraphEdits.renameOpsNamedLikeForeignVariables(sd);
  }

  /**
   * A packed matmul becomes a plain matmul of the unpacked weight: one dense variable per packed
   * one ([rows, cols], zeros outside the kept blocks), named as the weight was before packing
   * ({@code <W>_packed} -> {@code <W>}, in x·W orientation), and the packed variable leaves the
   * graph once all its uses are rewritten.
   */
  private static void densifyPacked(
      SameDiff sd, SameDiffOp op, PackedMatmulOp p, Map<String, SDVariable> unpacked) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    String packedName = in.get(1);
    SDVariable w =
        unpacked.computeIfAbsent(
            packedName,
            n -> {
              String base = n.replaceFirst("_packed(_\\d+)?$", "");
              String name = sd.hasVariable(base) ? sd.generateNewVarName(base, 0) : base;
              // MST may hold spare block slots after the kept ones: only the kept ones unpack
              INDArray values =
                  PackedBlockLinear.leadingBlocks(
                      sd.getArrForVarName(n), p.layout().keptBlocks(), p.layout().blockSize());
              return sd.var(name, PackedBlockLinear.unpack(values, p.layout()));
            });
    replaceWithMatmul(sd, op, sd.getVariable(in.get(0)), w, in.size() > 2 ? in.get(2) : null);
  }

  private static void densifyMatmul(SameDiff sd, SameDiffOp op) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    // x·Wᵀ ops read transpose(W) and transpose(mask): zero W itself, in its own orientation (the
    // transposes' arrays belong to the inference session)
    String wName = throughTranspose(sd, in.get(1)), mName = throughTranspose(sd, in.get(2));
    if (sd.getVariable(wName).getVariableType() == VariableType.VARIABLE) {
      INDArray w = sd.getArrForVarName(wName), m = sd.getArrForVarName(mName);
      if (w != null && m != null && Arrays.equals(w.shape(), m.shape())) {
        w.muli(m);
      }
    }
    replaceWithMatmul(
        sd,
        op,
        sd.getVariable(in.get(0)),
        sd.getVariable(in.get(1)),
        in.size() > 3 ? in.get(3) : null);
  }

  /** Replaces {@code op} by x·W (+ bias) under the op's output name. */
  private static void replaceWithMatmul(
      SameDiff sd, SameDiffOp op, SDVariable x, SDVariable wv, String bias) {
    String out = op.getOutputsOfOp().get(0);
    List<String> consumers = GraphEdits.removeOp(sd, op);
    int rank = LinearOps.rank(sd, x.name());
    // ND4J's matmul does not broadcast a rank-2 weight over [B, T, in]: contract the last axis
    SDVariable y =
        rank > 2
            ? sd.tensorMmul(out + "_densified_mm", x, wv, new int[] {rank - 1}, new int[] {0})
            : sd.mmul(out + "_densified_mm", x, wv);
    if (bias != null) {
      // bias_add rather than add: a new op gets the first free name of its kind, and an "add" op
      // named like a variable of the stale gradient function makes SameDiff's rename fail
      y = sd.nn().biasAdd(out + "_densified_bias", y, sd.getVariable(bias), false);
    }
    GraphEdits.freeOpName(sd, out);
    sd.updateVariableNameAndReference(y, out);
    GraphEdits.relink(sd, out, consumers);
  }

  private static void densifyLayerNorm(SameDiff sd, SameDiffOp op, FusedLayerNormOp ln) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    String out = op.getOutputsOfOp().get(0);
    SDVariable x = sd.getVariable(in.get(0));
    long[] shape = x.getShape();
    int axis = ln.axis() >= 0 ? ln.axis() : shape == null ? -1 : shape.length - 1;
    if (axis < 0) {
      throw new IllegalArgumentException(
          "fused layer-norm op '"
              + op.getName()
              + "': the rank of its input '"
              + x.name()
              + "' is not known (shape "
              + Arrays.toString(shape)
              + "); densify needs the last axis");
    }
    if (ln.eps() != 0.0) {
      throw new IllegalArgumentException(
          "fused layer-norm op '"
              + op.getName()
              + "' has eps = "
              + ln.eps()
              + "; densify allows only eps = 0 (ND4J's layer_norm has no epsilon)");
    }
    List<String> consumers = GraphEdits.removeOp(sd, op);
    SDVariable y =
        sd.nn()
            .layerNorm(
                out + "_densified_ln",
                x,
                sd.getVariable(in.get(1)),
                sd.getVariable(in.get(2)),
                false,
                axis);
    GraphEdits.freeOpName(sd, out);
    sd.updateVariableNameAndReference(y, out);
    GraphEdits.relink(sd, out, consumers);
  }

  private static void densifyGelu(SameDiff sd, SameDiffOp op) {
    String z = op.getInputsToOp().get(0);
    String out = op.getOutputsOfOp().get(0);
    List<String> consumers = GraphEdits.removeOp(sd, op);
    SDVariable y = sd.nn().gelu(out + "_densified_gelu", sd.getVariable(z));
    GraphEdits.freeOpName(sd, out);
    sd.updateVariableNameAndReference(y, out);
    GraphEdits.relink(sd, out, consumers);
  }

  private static void densifyAttention(
      SameDiff sd, SameDiffOp op, SparseAttentionOp attention, int seqLen) {
    List<String> in = new ArrayList<>(op.getInputsToOp());
    String out = op.getOutputsOfOp().get(0);
    for (String extra : op.getOutputsOfOp().subList(1, op.getOutputsOfOp().size())) {
      List<String> users = sd.getVariables().get(extra).getInputsForOp();
      if (users != null && !users.isEmpty()) {
        throw new IllegalArgumentException(
            "sparse attention op '"
                + op.getName()
                + "': its output '"
                + extra
                + "' (softmax statistics) is used by "
                + users
                + "; densify allows only the attention output");
      }
    }
    SDVariable q = sd.getVariable(in.get(0)),
        k = sd.getVariable(in.get(1)),
        v = sd.getVariable(in.get(2));
    long[] shape = q.getShape(); // [B, H, T, D] when known statically
    boolean staticShape = shape != null && shape.length == 4 && shape[1] > 0 && shape[2] > 0;
    int t = seqLen > 0 ? seqLen : staticShape ? (int) shape[2] : -1;
    if (t <= 0) {
      throw new IllegalArgumentException(
          "seqLen = "
              + seqLen
              + " and the shape of '"
              + q.name()
              + "' is "
              + Arrays.toString(shape)
              + "; pass the sequence length (> 0): Sparsify.densify(sd, seqLen)");
    }
    AttentionPattern pattern = attention.pattern();
    boolean perHead =
        pattern.getComponents().stream().anyMatch(c -> c.getKind() == AttentionPattern.Kind.RANDOM);
    if (perHead && !staticShape) {
      throw new IllegalArgumentException(
          "attention pattern '"
              + pattern
              + "' of op '"
              + op.getName()
              + "' draws random blocks per head, but the head count of '"
              + q.name()
              + "' is not known "
              + "statically (shape "
              + Arrays.toString(shape)
              + "); densify needs a static [B, H, T, D] shape");
    }
    int heads = perHead ? (int) shape[1] : 1; // without RANDOM every head has the same layout
    BlockLayout layout = pattern.layout(t, attention.blockSize(), heads);
    INDArray bias =
        SparseAttention.maskBias(layout, heads, q.dataType()); // [heads, T, T], broadcast over B
    List<String> consumers = GraphEdits.removeOp(sd, op);
    // explicit names: SameDiff's generated names can collide with those left by earlier rewrites
    String base = out + "_densified";
    SDVariable scores =
        sd.mmul(base + "_qk", q, k, false, true, false)
            .mul(base + "_scaled", attention.scale())
            .add(base + "_masked", sd.constant(base + "_mask", bias));
    SDVariable y = sd.mmul(base + "_pv", sd.nn().softmax(base + "_softmax", scores, 3), v);
    GraphEdits.freeOpName(sd, out);
    sd.updateVariableNameAndReference(y, out);
    GraphEdits.relink(sd, out, consumers);
  }

  /** The input of the transpose op producing {@code var}, else {@code var} itself. */
  private static String throughTranspose(SameDiff sd, String var) {
    SameDiffOp p = GraphEdits.producer(sd, var);
    return p != null && p.getOp() instanceof Transpose ? p.getInputsToOp().get(0) : var;
  }
}
