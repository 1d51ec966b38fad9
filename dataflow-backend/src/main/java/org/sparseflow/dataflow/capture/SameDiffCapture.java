package org.sparseflow.dataflow.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.functions.DifferentialFunction;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.CustomOp;
import org.sparseflow.dataflow.graph.DType;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;

/**
 * Op graph from a {@link SameDiff} graph by walking {@code sd.getOps()} (no execution). Shapes of
 * variables and constants are exact; placeholder dimensions of -1 become {@code batch}; shapes of
 * op outputs are propagated with simple rules (matmul, broadcasting elementwise, reductions to
 * scalars, everything else keeps its first input's shape) unless {@link #capture(SameDiff, Map)} is
 * given concrete shapes. Sparse matmuls take their density from a constant/variable mask input when
 * present.
 */
public final class SameDiffCapture {
  private SameDiffCapture() {}

  /** Static capture; placeholders' unknown (-1) dimensions become {@code batch}. */
  public static OpGraph capture(SameDiff sd, long batch) {
    return capture(sd, batch, null);
  }

  /**
   * Capture with known shapes of (some) variables, e.g. from one execution ({@code sd.outputAll}).
   */
  public static OpGraph capture(SameDiff sd, Map<String, long[]> knownShapes) {
    return capture(sd, 1, knownShapes);
  }

  /**
   * A whole training step without executing it: the forward + backward graph SameDiff builds for
   * {@code fit()} ({@code createGradFunction()}, needs loss variables) plus one Adam update per
   * trainable variable (fp32 moments), since M2.1 applies updaters outside the graph.
   */
  public static OpGraph captureTraining(SameDiff sd, long batch) {
    if (sd == null) {
      throw new IllegalArgumentException("sd must not be null");
    }
    if (sd.getLossVariables() == null || sd.getLossVariables().isEmpty()) {
      throw new IllegalArgumentException(
          "sd has no loss variables; call sd.setLossVariables(...) before capturing a training"
              + " step");
    }
    if (sd.getFunction("grad") == null) {
      sd.createGradFunction();
    }
    SameDiff grad = sd.getFunction("grad");
    List<String> trainable = new ArrayList<>();
    for (SDVariable v : sd.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE) {
        trainable.add(v.name());
      }
    }
    return capture(grad, batch, null, trainable);
  }

  private static OpGraph capture(SameDiff sd, long batch, Map<String, long[]> known) {
    return capture(sd, batch, known, List.of());
  }

  private static OpGraph capture(
      SameDiff sd, long batch, Map<String, long[]> known, List<String> optimizerFor) {
    if (sd == null) {
      throw new IllegalArgumentException("sd must not be null");
    }
    if (batch < 1) {
      throw new IllegalArgumentException("batch must be >= 1, got " + batch);
    }
    OpGraph.Builder b = OpGraph.builder("samediff");
    Map<String, Tensor> tensors = new HashMap<>();
    Map<String, long[]> shapes = new HashMap<>();
    for (Variable v : sd.getVariables().values()) {
      SDVariable var = v.getVariable();
      long[] s = known != null ? known.get(var.name()) : null;
      if (s == null && var.getVariableType() != VariableType.ARRAY) {
        s = var.getShape();
      }
      if (s != null) {
        long[] c = s.clone();
        for (int i = 0; i < c.length; i++) {
          if (c[i] < 0) {
            c[i] = batch;
          }
        }
        shapes.put(var.name(), c);
      }
    }
    for (SameDiffOp op : sd.getOps().values()) {
      DifferentialFunction fn = op.getOp();
      String opName = fn.opName();
      List<String> inNames = op.getInputsToOp() == null ? List.of() : op.getInputsToOp();
      List<String> outNames = op.getOutputsOfOp() == null ? List.of() : op.getOutputsOfOp();
      int maxRank = 0;
      List<long[]> inShapes = new ArrayList<>();
      for (String n : inNames) {
        long[] s = shapes.getOrDefault(n, new long[] {1});
        inShapes.add(s);
        maxRank = Math.max(maxRank, s.length);
      }
      OpKind kind = OpClassifier.kind(opName, maxRank);
      Phase phase = OpClassifier.phase(opName, kind);
      double density = 1.0;
      String pattern = "dense";
      if (kind == OpKind.SPARSE_LINEAR && inNames.size() >= 3) {
        SDVariable mask = sd.getVariable(inNames.get(2));
        INDArray m = mask == null ? null : mask.getArr();
        if (m != null && m.length() > 0) {
          density =
              Math.max(
                  1e-9, m.neq(0).castTo(DataType.DOUBLE).sumNumber().doubleValue() / m.length());
          int block =
              fn instanceof CustomOp && ((CustomOp) fn).iArgs().length > 0
                  ? (int) ((CustomOp) fn).iArgs()[0]
                  : 1;
          pattern = block > 1 ? "block" + block : "unstructured";
        }
      }
      SparsityInfo sp = density < 1.0 ? new SparsityInfo(density, pattern) : SparsityInfo.DENSE;
      List<Tensor> in = new ArrayList<>();
      for (int i = 0; i < inNames.size(); i++) {
        String n = inNames.get(i);
        Tensor t = tensors.get(n);
        if (t == null) {
          SDVariable var = sd.getVariable(n);
          VariableType vt = var == null ? VariableType.ARRAY : var.getVariableType();
          TensorKind tk =
              vt == VariableType.VARIABLE
                  ? TensorKind.WEIGHT
                  : vt == VariableType.PLACEHOLDER
                      ? TensorKind.INPUT
                      : vt == VariableType.CONSTANT ? TensorKind.WEIGHT : TensorKind.ACTIVATION;
          SparsityInfo tsp = kind == OpKind.SPARSE_LINEAR && i == 1 ? sp : SparsityInfo.DENSE;
          t = b.tensor(n, inShapes.get(i), dtype(var), tk, tsp);
          tensors.put(n, t);
        }
        if (!in.contains(t)) {
          in.add(t);
        }
      }
      long[][] is = inShapes.toArray(new long[0][]);
      List<Tensor> out = new ArrayList<>();
      List<long[]> outShapes = new ArrayList<>();
      for (String n : outNames) {
        long[] s = shapes.get(n);
        if (s == null) {
          s = inferShape(kind, is);
        }
        shapes.put(n, s);
        outShapes.add(s);
        Tensor t = b.tensor(n, s, dtype(sd.getVariable(n)), TensorKind.ACTIVATION);
        tensors.put(n, t);
        out.add(t);
      }
      double flops =
          OpClassifier.flops(kind, opName, is, outShapes.toArray(new long[0][]), density);
      b.op(op.getName(), opName, kind, phase, -1, flops, in, out, sp);
    }
    for (String w : optimizerFor) {
      long[] shape = shapes.get(w);
      if (shape == null) {
        continue;
      }
      Tensor wt = tensors.get(w);
      if (wt == null) {
        wt = b.tensor(w, shape, DType.FP32, TensorKind.WEIGHT);
      }
      Tensor g = tensors.get(w + "-grad");
      if (g == null) {
        g = b.tensor(w + "-grad", shape, wt.dtype(), TensorKind.WEIGHT_GRAD);
      }
      Tensor m = b.tensor(w + ".m", shape, DType.FP32, TensorKind.OPTIMIZER_STATE);
      Tensor v = b.tensor(w + ".v", shape, DType.FP32, TensorKind.OPTIMIZER_STATE);
      List<Tensor> outs =
          List.of(
              b.tensor(w + "'", shape, wt.dtype(), TensorKind.WEIGHT),
              b.tensor(w + ".m'", shape, DType.FP32, TensorKind.OPTIMIZER_STATE),
              b.tensor(w + ".v'", shape, DType.FP32, TensorKind.OPTIMIZER_STATE));
      b.op(
          "adam." + w,
          "adam_updater",
          OpKind.OPTIMIZER,
          Phase.OPTIMIZER,
          -1,
          12.0 * OpClassifier.length(shape),
          List.of(wt, g, m, v),
          outs);
    }
    return b.build();
  }

  private static DType dtype(SDVariable v) {
    if (v == null || v.dataType() == null) {
      return DType.FP32;
    }
    return DType.fromName(v.dataType().name());
  }

  static long[] inferShape(OpKind kind, long[][] in) {
    if (in.length == 0) {
      return new long[] {1};
    }
    switch (kind) {
      case LINEAR:
      case SPARSE_LINEAR:
      case BATCHED_MATMUL:
        {
          if (in.length < 2) {
            return in[0].clone();
          }
          long[] a = in[0], w = in[1];
          long[] s = a.clone();
          s[s.length - 1] = w[w.length - 1];
          return s;
        }
      case REDUCTION:
      case LOSS:
        return new long[] {1};
      case ELEMENTWISE:
        {
          long[] best = in[0];
          for (long[] s : in) {
            if (OpClassifier.length(s) > OpClassifier.length(best)) {
              best = s;
            }
          }
          return best.clone();
        }
      default:
        return in[0].clone();
    }
  }
}
