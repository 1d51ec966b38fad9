package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.samediff.LinearOps.Kind;
import org.sparseflow.layers.samediff.LinearOps.Use;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.layers.sparsify.SparsityPlanner;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.PackedMatmulOp;
import org.sparseflow.ops.samediff.SparseFlowOps;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * The linear-layer half of {@link SameDiffSparsifier#rewrite}: every trainable rank-2 weight used
 * by the linear ops of {@link LinearOps} is planned (include/exclude, first/last by depth, density
 * allocation); a selected weight gets one 0/1 mask constant {@code <W>_mask} of its own shape and
 * every use is rewritten to a sparse matmul on it (x·Wᵀ as the sparse matmul of x with transpose(W)
 * and transpose(mask); a tied embedding's lookup reads {@code W o mask}). Weights with a use that
 * cannot be rewritten are reported dense with that use named.
 */
final class MatmulRewriter {
  private MatmulRewriter() {}

  static void rewriteMatmuls(
      SparsityConfig cfg,
      SameDiff sd,
      List<AttentionSite> sites,
      List<Entry> entries,
      Map<String, SparseMask> given) {
    Map<String, List<Use>> uses = collectUses(sd);
    Map<String, String> blocked = new LinkedHashMap<>();
    List<SparsityPlanner.Item> items = new ArrayList<>();
    Set<String> layerOps = new HashSet<>();
    for (Map.Entry<String, List<Use>> e : uses.entrySet()) {
      String w = e.getKey();
      for (Use u : e.getValue()) {
        if (u.linear()) {
          layerOps.add(u.op().getName());
        }
        if (u.problem() != null && !blocked.containsKey(w)) {
          blocked.put(w, u.problem() + ": " + u.describe());
        }
      }
      items.add(new SparsityPlanner.Item(w, List.of(w), Map.of(w, sd.getVariable(w).getShape())));
    }
    Map<String, Integer> depth = LayerDepth.of(sd, layerOps);
    int minDepth = Integer.MAX_VALUE, maxDepth = 0;
    for (Integer d : depth.values()) {
      minDepth = Math.min(minDepth, d);
      maxDepth = Math.max(maxDepth, d);
    }
    Set<String> first = new HashSet<>(), last = new HashSet<>();
    for (Map.Entry<String, List<Use>> e : uses.entrySet()) {
      for (Use u : e.getValue()) {
        Integer d = depth.get(u.op().getName());
        if (d != null && d == minDepth) {
          first.add(e.getKey());
        }
        if (d != null && d == maxDepth) {
          last.add(e.getKey());
        }
      }
    }
    List<String> allNames = new ArrayList<>(sd.getVariables().keySet());
    String note =
        " (layer depth from the graph inputs: first = " + minDepth + ", last = " + maxDepth;
    Map<String, SparsityPlanner.Decision> plan =
        SparsityPlanner.plan(cfg, items, allNames, first, last, note + ")");
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    for (String w : given.keySet()) {
      if (!plan.containsKey(w) || blocked.containsKey(w) || !plan.get(w).sparse()) {
        throw new IllegalArgumentException(
            "masks: a mask is given for '"
                + w
                + "', which this config leaves dense ("
                + (blocked.containsKey(w)
                    ? blocked.get(w)
                    : plan.containsKey(w) ? plan.get(w).reason() : "no linear use")
                + "); allowed: masks for the weights the config makes sparse");
      }
    }
    Map<String, INDArray> masks = new LinkedHashMap<>();
    for (SparsityPlanner.Item it : items) {
      String w = it.name();
      SparsityPlanner.Decision d = plan.get(w);
      if (given.containsKey(w)) {
        continue; // added after the head-aware adjustment, which must not move given units
      }
      if (blocked.containsKey(w) || !d.sparse()) {
        entries.add(
            dense(sd, w, uses.get(w), blocked.containsKey(w) ? blocked.get(w) : d.reason()));
        continue;
      }
      INDArray warr = sd.getArrForVarName(w);
      long[] shape = warr.shape();
      SparseMask mask =
          cfg.getInitialMask() == InitialMask.MAGNITUDE
              ? spec.fromMagnitude(warr, d.density())
              : spec.random(shape[0], shape[1], d.density(), cfg.getSeed() * 31 + w.hashCode());
      masks.put(w, mask.toDense(warr.dataType()));
    }
    List<String> headNotes = HeadAwareMasks.adjust(sd, sites, uses, masks, spec);
    Map<String, INDArray> drawn = masks;
    masks = new LinkedHashMap<>();
    // in the graph's variable order, so packed variables are created in their weights' order (the
    // order MST registers weights in, and so draws their first masks in)
    for (String w : new ArrayList<>(sd.getVariables().keySet())) {
      if (given.containsKey(w)) {
        masks.put(w, given.get(w).toDense(sd.getArrForVarName(w).dataType()));
      } else if (drawn.containsKey(w)) {
        masks.put(w, drawn.get(w));
      }
    }
    for (Map.Entry<String, INDArray> e : masks.entrySet()) {
      String w = e.getKey();
      INDArray dense01 = e.getValue();
      sd.getArrForVarName(w).muli(dense01);
      String unpacked =
          cfg.packedStorage() ? PackedMatmulRewriter.blocker(spec, uses.get(w)) : "masked storage";
      if (unpacked == null) {
        PackedMatmulRewriter.apply(sd, w, uses.get(w), dense01, spec);
      } else {
        apply(sd, w, uses.get(w), dense01, spec);
      }
      long n = dense01.length();
      double kept = dense01.sumNumber().doubleValue() / n;
      long linear = uses.get(w).stream().filter(Use::linear).count();
      String why =
          plan.get(w).reason()
              + (given.containsKey(w) ? "; given mask" : "")
              + " ("
              + linear
              + " linear use(s)"
              + (linear < uses.get(w).size() ? ", tied: its lookup reads W o mask" : "")
              + ")"
              + headNote(headNotes, w)
              + (unpacked == null
                  ? "; packed storage (" + w + "_packed: kept blocks only)"
                  : cfg.packedStorage() ? "; masked storage: " + unpacked : "");
      entries.add(
          new Entry(
              w,
              LinearOps.kind(uses.get(w)),
              unpacked == null ? PackedMatmulOp.OP_NAME : SparseMatmulOp.OP_NAME,
              Status.SPARSE,
              spec.toString(),
              given.containsKey(w) ? given.get(w).density() : plan.get(w).density(),
              kept,
              null,
              n,
              why));
    }
  }

  private static String headNote(List<String> notes, String w) {
    for (String n : notes) {
      if (n.startsWith(w + ":")) {
        return "; " + n.substring(w.length() + 1).trim();
      }
    }
    return "";
  }

  /** weight -> every use, for weights with at least one linear use, in graph order. */
  static Map<String, List<Use>> collectUses(SameDiff sd) {
    Map<String, List<Use>> out = new LinkedHashMap<>();
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      List<String> in = op.getInputsToOp();
      if (in == null) {
        continue;
      }
      for (String name : new HashSet<>(in)) {
        if (!LinearOps.isWeight(sd.getVariable(name))) {
          continue;
        }
        out.computeIfAbsent(name, k -> new ArrayList<>()).add(LinearOps.classify(sd, op, name));
      }
    }
    out.values().removeIf(l -> l.stream().noneMatch(Use::linear));
    return out;
  }

  private static Entry dense(SameDiff sd, String w, List<Use> uses, String why) {
    long[] s = sd.getVariable(w).getShape();
    String kind = LinearOps.kind(uses);
    return new Entry(w, kind, kind, Status.DENSE, null, 1.0, Double.NaN, null, s[0] * s[1], why);
  }

  /** Rewrites every use of {@code w} onto one mask constant. */
  private static void apply(
      SameDiff sd, String w, List<Use> uses, INDArray dense01, PatternSpec spec) {
    SDVariable maskVar = sd.constant(sd.generateNewVarName(w + "_mask", 0), dense01);
    SDVariable wv = sd.getVariable(w);
    SDVariable wT = null, maskT = null, masked = null;
    for (Use u : uses) {
      if (u.kind() == Kind.GATHER) {
        if (masked == null) {
          masked = wv.mul(sd.generateNewVarName(w + "_masked", 0), maskVar);
        }
        GraphEdits.replaceInput(sd, u.op(), w, masked.name());
        continue;
      }
      if (u.transB() && wT == null) {
        wT = sd.transpose(sd.generateNewVarName(w + "_T", 0), wv);
        maskT = sd.transpose(sd.generateNewVarName(w + "_mask_T", 0), maskVar);
      }
      SDVariable weight = u.transB() ? wT : wv, mask = u.transB() ? maskT : maskVar;
      replaceLinearUse(
          sd,
          u,
          (name, x, bias) ->
              SparseFlowOps.sparseMatmul(sd, name, x, weight, mask, spec, bias, false));
    }
  }

  /** Builds the sparse product of x (with the use's bias, or null) as a variable named name. */
  interface SparseProduct {
    SDVariable build(String name, SDVariable x, SDVariable bias);
  }

  /**
   * Replaces the op of a linear use by {@code product}, keeping its output name: x is transposed
   * first for a transA use, and the product is transposed for a transR use.
   */
  static void replaceLinearUse(SameDiff sd, Use u, SparseProduct product) {
    SameDiffOp op = u.op();
    String out = op.getOutputsOfOp().get(0);
    SDVariable x = sd.getVariable(u.x());
    SDVariable bias = u.kind() == Kind.XW_PLUS_B ? sd.getVariable(op.getInputsToOp().get(2)) : null;
    List<String> consumers = GraphEdits.removeOp(sd, op);
    if (u.transA()) {
      x = sd.transpose(sd.generateNewVarName(out + "_xT", 0), x);
    }
    if (u.transR()) {
      sd.transpose(out, product.build(sd.generateNewVarName(out + "_untransposed", 0), x, bias));
    } else {
      product.build(out, x, bias);
    }
    GraphEdits.relink(sd, out, consumers);
  }
}
