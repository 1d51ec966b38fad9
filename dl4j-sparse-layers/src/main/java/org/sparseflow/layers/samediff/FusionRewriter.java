package org.sparseflow.layers.samediff;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.impl.transforms.custom.LayerNorm;
import org.nd4j.linalg.api.ops.impl.transforms.strict.GELU;
import org.sparseflow.layers.config.FuseSettings;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.ops.samediff.FusedGeluOp;
import org.sparseflow.ops.samediff.FusedLayerNormOp;
import org.sparseflow.ops.samediff.FusedOps;

/**
 * The fusion part of {@link SameDiffSparsifier#rewrite}, by the config's {@code fuse} section (bias
 * adds of sparse matmuls: {@link BiasFolder}): ND4J's {@code layer_norm} over the last axis with
 * gain and bias becomes {@link FusedLayerNormOp} (eps 0, as the stock op), and ND4J's {@code gelu}
 * (the sigmoid form; not {@code precise_gelu}) becomes {@link FusedGeluOp}. Each replacement keeps
 * the output's name, so consumers and references by name are unchanged, and adds one report entry;
 * a {@code layer_norm} that cannot be fused (another axis, no bias, channels-first gain) gets a
 * DENSE entry saying why. SameDiff keeps no static shape for intermediate variables; for those the
 * axis is recorded in the op, which checks at run time that it is the input's last axis.
 */
final class FusionRewriter {
  private FusionRewriter() {}

  static final String LAYER_NORM = "layer_norm";
  static final String GELU_NAME = "gelu";

  static void rewrite(SparsityConfig cfg, SameDiff sd, List<Entry> entries) {
    FuseSettings fuse = cfg.fuseOrDefault();
    if (fuse.isBiasAdd()) {
      BiasFolder.fold(sd, entries);
    }
    for (SameDiffOp op : new ArrayList<>(sd.getOps().values())) {
      if (fuse.isLayerNorm() && op.getOp() instanceof LayerNorm) {
        fuseLayerNorm(sd, op, entries);
      } else if (fuse.isGelu() && op.getOp().getClass() == GELU.class) {
        fuseGelu(sd, op, entries);
      }
    }
  }

  /**
   * Why this layer_norm cannot become the fused op, or null when it can; axis out in {@code ax}.
   */
  private static String layerNormProblem(SameDiff sd, SameDiffOp op, int[] ax) {
    List<String> in = op.getInputsToOp();
    if (in == null || in.size() != 3) {
      return "has no bias input (fused op needs gain and bias)";
    }
    CustomOp c = (CustomOp) op.getOp();
    long[] dims = c.iArgs();
    boolean[] b = c.bArgs();
    boolean channelsFirst = b != null && b.length > 0 && b[0];
    long[] shape = sd.getVariable(in.get(0)).getShape();
    if (dims == null || dims.length != 1) {
      return "normalises over dimensions " + GraphEdits.shape(dims) + ", not one axis";
    }
    if (shape == null) {
      // intermediate variables have no static shape in SameDiff: the op checks at run time that
      // the recorded axis is the last one
      if (channelsFirst && dims[0] != 1) {
        return "channels-first gain broadcast over axis 1, normalising axis " + dims[0];
      }
      ax[0] = (int) dims[0];
      return null;
    }
    int rank = shape.length;
    long d = dims[0] < 0 ? dims[0] + rank : dims[0];
    if (d != rank - 1) {
      return "normalises over axis " + dims[0] + " of a rank-" + rank + " input, not the last";
    }
    if (channelsFirst && rank != 2) {
      return "channels-first gain broadcast over axis 1 of a rank-" + rank + " input";
    }
    ax[0] = rank - 1;
    return null;
  }

  private static void fuseLayerNorm(SameDiff sd, SameDiffOp op, List<Entry> entries) {
    String out = op.getOutputsOfOp().get(0);
    int[] ax = new int[1];
    String why = layerNormProblem(sd, op, ax);
    List<String> in = new ArrayList<>(op.getInputsToOp());
    long params = paramCount(sd, in.subList(1, in.size()));
    if (why != null) {
      entries.add(entry(out, LAYER_NORM, LAYER_NORM, Status.DENSE, params, "not fused: " + why));
      return;
    }
    List<String> consumers = GraphEdits.removeOp(sd, op);
    FusedOps.layerNorm(
        sd,
        out,
        sd.getVariable(in.get(0)),
        sd.getVariable(in.get(1)),
        sd.getVariable(in.get(2)),
        0.0,
        ax[0]);
    GraphEdits.relink(sd, out, consumers);
    entries.add(
        entry(
            out,
            LAYER_NORM,
            FusedLayerNormOp.OP_NAME,
            Status.FUSED,
            params,
            "fused (fuse.layerNorm) over axis "
                + ax[0]
                + (ax[0] < 0 ? " (the last)" : "")
                + (sd.getVariable(in.get(0)).getShape() == null
                    ? " (input rank not static: checked at run time)"
                    : "")));
  }

  private static void fuseGelu(SameDiff sd, SameDiffOp op, List<Entry> entries) {
    String out = op.getOutputsOfOp().get(0);
    String z = op.getInputsToOp().get(0);
    List<String> consumers = GraphEdits.removeOp(sd, op);
    FusedOps.gelu(sd, out, sd.getVariable(z));
    GraphEdits.relink(sd, out, consumers);
    entries.add(
        entry(
            out,
            GELU_NAME,
            FusedGeluOp.OP_NAME,
            Status.FUSED,
            0,
            "fused (fuse.gelu): one-pass backward"));
  }

  private static long paramCount(SameDiff sd, List<String> names) {
    long n = 0;
    for (String name : names) {
      SDVariable v = sd.getVariable(name);
      long[] s = v == null ? null : v.getShape();
      if (s != null) {
        long k = 1;
        for (long d : s) {
          k *= Math.max(d, 0);
        }
        n += k;
      }
    }
    return n;
  }

  private static Entry entry(
      String name, String from, String to, Status status, long params, String reason) {
    return new Entry(name, from, to, status, null, 1.0, Double.NaN, null, params, reason);
  }
}
