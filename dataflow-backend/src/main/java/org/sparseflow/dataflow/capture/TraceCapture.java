package org.sparseflow.dataflow.capture;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.sparseflow.dataflow.backend.RecordedOp;
import org.sparseflow.dataflow.graph.DType;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.dataflow.graph.Phase;
import org.sparseflow.dataflow.graph.SparsityInfo;
import org.sparseflow.dataflow.graph.Tensor;
import org.sparseflow.dataflow.graph.TensorKind;

/**
 * Op graph from ops recorded by the dataflow backend (one iteration). Producers and consumers are
 * linked through buffer identities (the latest writer of a buffer is the producer of what is read
 * from it). Tensors read before any op wrote them are graph inputs: the second operand of a rank-2
 * matmul and optimizer inputs count as weights, the rest as inputs. Phase comes from op names
 * ({@code *_bp} = backward, updaters = optimizer).
 */
public final class TraceCapture {
  private TraceCapture() {}

  public static OpGraph fromRecords(String name, List<RecordedOp> records) {
    if (records.isEmpty()) {
      throw new IllegalArgumentException("records is empty: no op was recorded for '" + name + "'");
    }
    OpGraph.Builder b = OpGraph.builder(name);
    Map<String, Tensor> latest = new HashMap<>();
    int n = 0;
    for (RecordedOp r : records) {
      int maxRank = 0;
      for (long[] s : r.inputShapes()) {
        maxRank = Math.max(maxRank, s.length);
      }
      OpKind kind = OpClassifier.kind(r.opName(), maxRank);
      Phase phase = OpClassifier.phase(r.opName(), kind);
      SparsityInfo sp =
          r.density() < 1.0 ? new SparsityInfo(r.density(), r.pattern()) : SparsityInfo.DENSE;
      List<Tensor> in = new ArrayList<>();
      for (int i = 0; i < r.inputShapes().size(); i++) {
        String id = r.inputIds().get(i);
        Tensor t = latest.get(id);
        if (t == null) {
          boolean weight =
              (kind == OpKind.LINEAR || kind == OpKind.SPARSE_LINEAR) && i == 1
                  || kind == OpKind.OPTIMIZER;
          TensorKind tk = weight ? TensorKind.WEIGHT : TensorKind.INPUT;
          SparsityInfo tsp = weight && kind == OpKind.SPARSE_LINEAR ? sp : SparsityInfo.DENSE;
          t =
              b.tensor(
                  "in" + (n++) + ":" + id,
                  r.inputShapes().get(i),
                  DType.fromName(r.inputTypes().get(i)),
                  tk,
                  tsp);
          latest.put(id, t);
        }
        if (!in.contains(t)) {
          in.add(t);
        }
      }
      List<Tensor> out = new ArrayList<>();
      for (int i = 0; i < r.outputShapes().size(); i++) {
        Tensor t =
            b.tensor(
                "t" + (n++),
                r.outputShapes().get(i),
                DType.fromName(r.outputTypes().get(i)),
                TensorKind.ACTIVATION);
        out.add(t);
      }
      long[][] is = r.inputShapes().toArray(new long[0][]);
      long[][] os = r.outputShapes().toArray(new long[0][]);
      double flops = OpClassifier.flops(kind, r.opName(), is, os, sp.density());
      b.op(r.opName() + "#" + r.sequence(), r.opName(), kind, phase, -1, flops, in, out, sp);
      // register outputs after inputs so in-place ops read the old value and write a new one
      for (int i = 0; i < out.size(); i++) {
        latest.put(r.outputIds().get(i), out.get(i));
      }
    }
    return b.build();
  }
}
