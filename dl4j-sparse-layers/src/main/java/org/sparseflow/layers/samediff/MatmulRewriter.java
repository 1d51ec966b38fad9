package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.layers.sparsify.SparsityPlanner;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.SparseFlowOps;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * The matmul half of {@link SameDiffSparsifier#rewrite}: {@code matmul(x, W)} with a selected
 * trainable rank-2 W becomes a sparse matmul with a 0/1 mask constant {@code <W>_mask}.
 */
final class MatmulRewriter {
  private MatmulRewriter() {}

  static void rewriteMatmuls(SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    // weight name -> matmul ops using it, in graph (creation = topological) order
    Map<String, List<SameDiffOp>> uses = new LinkedHashMap<>();
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      if (!LinearOps.isLinear(op)) {
        continue;
      }
      String w = op.getInputsToOp().get(1);
      SDVariable wv = sd.getVariable(w);
      if (wv == null || wv.getVariableType() != VariableType.VARIABLE) {
        continue;
      }
      long[] shape = wv.getShape();
      if (shape == null || shape.length != 2) {
        continue;
      }
      uses.computeIfAbsent(w, k -> new ArrayList<>()).add(op);
    }
    List<SparsityPlanner.Item> items = new ArrayList<>();
    Map<String, String> blocked = new LinkedHashMap<>();
    for (Map.Entry<String, List<SameDiffOp>> e : uses.entrySet()) {
      String w = e.getKey();
      String why = null;
      for (SameDiffOp op : e.getValue()) {
        if (!GraphEdits.plainMatmul(op)) {
          why = "used by a transposed/scaled matmul '" + op.getName() + "'";
        }
      }
      if (why == null) {
        for (String consumer : sd.getVariables().get(w).getInputsForOp()) {
          DifferentialFunction f = sd.getOps().get(consumer).getOp();
          if (!LinearOps.isLinear(sd.getOps().get(consumer))
              || !sd.getOps().get(consumer).getInputsToOp().get(1).equals(w)) {
            why = "also used by non-matmul op '" + consumer + "' (" + f.opName() + ")";
            break;
          }
        }
      }
      if (why != null) {
        blocked.put(w, why);
      }
      items.add(new SparsityPlanner.Item(w, List.of(w), Map.of(w, sd.getVariable(w).getShape())));
    }
    List<String> allNames = new ArrayList<>(sd.getVariables().keySet());
    Map<String, SparsityPlanner.Decision> plan = SparsityPlanner.plan(cfg, items, allNames);
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    for (SparsityPlanner.Item it : items) {
      String w = it.name();
      long[] shape = sd.getVariable(w).getShape();
      long n = shape[0] * shape[1];
      SparsityPlanner.Decision d = plan.get(w);
      String why = blocked.get(w);
      if (why != null || !d.sparse()) {
        entries.add(
            new Entry(
                w,
                LinearOps.kind(uses.get(w).get(0)),
                LinearOps.kind(uses.get(w).get(0)),
                Status.DENSE,
                null,
                1.0,
                Double.NaN,
                null,
                n,
                why != null ? why : d.reason()));
        continue;
      }
      INDArray warr = sd.getArrForVarName(w);
      SparseMask mask =
          cfg.getInitialMask() == InitialMask.MAGNITUDE
              ? spec.fromMagnitude(warr, d.density())
              : spec.random(shape[0], shape[1], d.density(), cfg.getSeed() * 31 + w.hashCode());
      INDArray dense01 = mask.toDense(warr.dataType());
      warr.muli(dense01);
      SDVariable maskVar = sd.constant(sd.generateNewVarName(w + "_mask", 0), dense01);
      for (SameDiffOp op : uses.get(w)) {
        String x = op.getInputsToOp().get(0);
        String out = op.getOutputsOfOp().get(0);
        SDVariable bias = LinearOps.bias(sd, op);
        List<String> consumers = GraphEdits.removeOp(sd, op);
        SparseFlowOps.sparseMatmul(
            sd, out, sd.getVariable(x), sd.getVariable(w), maskVar, spec, bias, false);
        GraphEdits.relink(sd, out, consumers);
      }
      entries.add(
          new Entry(
              w,
              LinearOps.kind(uses.get(w).get(0)),
              SparseMatmulOp.OP_NAME,
              Status.SPARSE,
              spec.toString(),
              d.density(),
              (double) mask.nnz() / n,
              null,
              n,
              d.reason() + " (" + uses.get(w).size() + " matmul(s))"));
    }
  }
}
