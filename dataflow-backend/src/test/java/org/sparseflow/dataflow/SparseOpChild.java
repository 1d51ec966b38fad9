package org.sparseflow.dataflow;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.dataflow.backend.OpRecorder;
import org.sparseflow.dataflow.backend.RecordedOp;
import org.sparseflow.dataflow.capture.TraceCapture;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.graph.OpKind;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * Child JVM for {@link DataflowBackendTest}: runs a SparseFlow sparse matmul and prints what was
 * recorded.
 */
public final class SparseOpChild {
  public static void main(String[] args) {
    Nd4j.getRandom().setSeed(11);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.FLOAT, -1, 64);
    SDVariable w = sd.var("w", Nd4j.rand(DataType.FLOAT, 64, 32));
    SparseMask mask = PatternSpec.parse("block16").random(64, 32, 0.25, 5);
    SDVariable y = SparseFlowOps.sparseMatmul(sd, x, w, mask);
    INDArray out = sd.output(Map.of("x", Nd4j.rand(DataType.FLOAT, 8, 64)), y.name()).get(y.name());
    System.out.println("BACKEND " + Nd4j.getBackend().getClass().getName());
    System.out.println(String.format(Locale.ROOT, "OUTSUM %.6f", out.sumNumber().doubleValue()));
    List<RecordedOp> ops = OpRecorder.global().iteration(OpRecorder.global().currentIteration());
    RecordedOp sparse = ops.stream().filter(RecordedOp::isSparseFlowOp).findFirst().orElse(null);
    if (sparse == null) {
      System.out.println("SPARSEOP none");
      return;
    }
    System.out.println(
        String.format(
            Locale.ROOT,
            "SPARSEOP %s density=%.4f pattern=%s",
            sparse.opName(),
            sparse.density(),
            sparse.pattern()));
    OpGraph g = TraceCapture.fromRecords("sparse", ops);
    double flops =
        g.ops().stream()
            .filter(o -> o.kind() == OpKind.SPARSE_LINEAR)
            .mapToDouble(o -> o.flops())
            .sum();
    System.out.println(String.format(Locale.ROOT, "SPARSEFLOPS %.1f", flops));
  }
}
