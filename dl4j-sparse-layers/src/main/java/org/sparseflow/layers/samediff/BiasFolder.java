package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.AddOp;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.PackedMatmulOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * The {@code fuse.biasAdd} part of {@link SameDiffSparsifier#rewrite}: {@code add(y, b)} where
 * {@code y} is a bias-less sparse matmul's output (masked or packed storage) consumed only by that
 * add, and {@code b} has static shape {@code [nOut]} (W's column count) and W's data type, becomes
 * one sparse matmul with bias. The add and its backward {@code add_bp} (a broadcast and a column
 * reduction per step) disappear; the sparse matmul's backward sums the bias gradient in its own
 * pass. The add's output name is kept, so consumers are unchanged; the matmul's intermediate output
 * is gone.
 */
final class BiasFolder {
  private BiasFolder() {}

  static void fold(SameDiff sd, List<Entry> entries) {
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      boolean masked = op.getOp() instanceof SparseMatmulOp && op.getInputsToOp().size() == 3;
      boolean packed = op.getOp() instanceof PackedMatmulOp && op.getInputsToOp().size() == 2;
      if (!masked && !packed) {
        continue;
      }
      SDVariable w = sd.getVariable(op.getInputsToOp().get(1));
      long nOut = packed ? ((PackedMatmulOp) op.getOp()).layout().cols() : columns(w.getShape());
      String bias = foldableBias(sd, op, nOut, w.dataType());
      if (bias == null) {
        continue;
      }
      String out = op.getOutputsOfOp().get(0);
      SameDiffOp add = sd.getOps().get(sd.getVariables().get(out).getInputsForOp().get(0));
      String addOut = add.getOutputsOfOp().get(0);
      List<String> in = new ArrayList<>(op.getInputsToOp());
      List<String> consumers = GraphEdits.removeOp(sd, add);
      GraphEdits.removeOp(sd, op);
      SDVariable x = sd.getVariable(in.get(0));
      SDVariable y;
      if (packed) {
        y =
            new PackedMatmulOp(
                    sd, x, w, sd.getVariable(bias), ((PackedMatmulOp) op.getOp()).layout())
                .outputVariable();
      } else {
        SparseMatmulOp mm = (SparseMatmulOp) op.getOp();
        y =
            new SparseMatmulOp(
                    sd,
                    x,
                    w,
                    sd.getVariable(in.get(2)),
                    sd.getVariable(bias),
                    mm.blockSize(),
                    mm.denseWeightGrad())
                .outputVariable();
      }
      GraphEdits.freeOpName(sd, addOut);
      sd.updateVariableNameAndReference(y, addOut);
      GraphEdits.relink(sd, addOut, consumers);
      long[] bs = sd.getVariable(bias).getShape();
      entries.add(
          new Entry(
              addOut,
              "add (bias)",
              op.getOp().opName() + "+bias",
              Status.FUSED,
              null,
              1.0,
              Double.NaN,
              null,
              bs[0],
              "fused (fuse.biasAdd): bias '"
                  + bias
                  + "' folded into the sparse matmul of '"
                  + in.get(1)
                  + "'"));
    }
  }

  /** The column count of a rank-2 shape, or -1. */
  private static long columns(long[] shape) {
    return shape != null && shape.length == 2 ? shape[1] : -1;
  }

  /**
   * The bias variable ([nOut], of data type dt) of the add that alone consumes this sparse matmul,
   * or null.
   */
  private static String foldableBias(SameDiff sd, SameDiffOp op, long nOut, DataType dt) {
    String out = op.getOutputsOfOp().get(0);
    List<String> users = sd.getVariables().get(out).getInputsForOp();
    if (users == null || users.size() != 1 || sd.getLossVariables().contains(out)) {
      return null;
    }
    SameDiffOp add = sd.getOps().get(users.get(0));
    List<String> ain = add.getInputsToOp();
    if (!(add.getOp() instanceof AddOp) || ain == null || ain.size() != 2) {
      return null;
    }
    int mi = ain.indexOf(out);
    if (mi < 0 || ain.get(0).equals(ain.get(1))) {
      return null;
    }
    SDVariable b = sd.getVariable(ain.get(1 - mi));
    long[] bs = b.getShape();
    if (bs == null || bs.length != 1 || nOut < 0 || bs[0] != nOut) {
      return null;
    }
    return b.dataType() == dt ? b.name() : null;
  }
}
