package org.sparseflow.dataflow.backend;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.BroadcastOp;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.IndexAccumulation;
import org.nd4j.linalg.api.ops.Op;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.api.ops.RandomOp;
import org.nd4j.linalg.api.ops.ReduceOp;
import org.nd4j.linalg.api.ops.ScalarOp;
import org.nd4j.linalg.api.ops.impl.summarystats.Variance;
import org.nd4j.linalg.api.rng.Random;
import org.sparseflow.ops.samediff.SparseFlowOpExecutioner;

/**
 * SparseFlow's CPU executioner with recording: every top-level op (SparseFlow Java ops included) is
 * executed unchanged by the parent class (so results are bit-identical) and then recorded in {@link
 * OpRecorder#global()}. Nested calls made by the executioner itself (and the mask density
 * computation) are not recorded.
 */
public class RecordingOpExecutioner extends SparseFlowOpExecutioner {
  private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

  public RecordingOpExecutioner() {
    super();
  }

  private <T> T rec(
      Supplier<T> body,
      Supplier<String> name,
      String category,
      Supplier<List<INDArray>> in,
      Function<T, List<INDArray>> out,
      CustomOp custom) {
    int[] d = DEPTH.get();
    d[0]++;
    T result;
    try {
      result = body.get();
    } finally {
      d[0]--;
    }
    if (d[0] == 0) {
      d[0]++;
      try {
        Recording.record(name.get(), category, in.get(), out.apply(result), custom);
      } finally {
        d[0]--;
      }
    }
    return result;
  }

  private static List<INDArray> ops(Op op) {
    List<INDArray> l = new ArrayList<>(3);
    if (op.x() != null) {
      l.add(op.x());
    }
    if (op.y() != null) {
      l.add(op.y());
    }
    return l;
  }

  private static List<INDArray> one(INDArray a) {
    return a == null ? List.of() : List.of(a);
  }

  @Override
  public INDArray exec(Op op) {
    return rec(
        () -> super.exec(op),
        op::opName,
        "legacy",
        () -> ops(op),
        r -> one(r == null ? op.z() : r),
        null);
  }

  @Override
  public INDArray exec(Op op, OpContext oc) {
    return rec(
        () -> super.exec(op, oc),
        op::opName,
        "legacy",
        () -> oc != null && !oc.getInputArrays().isEmpty() ? oc.getInputArrays() : ops(op),
        r -> one(r == null ? op.z() : r),
        null);
  }

  @Override
  public INDArray exec(ReduceOp op) {
    return rec(() -> super.exec(op), op::opName, "reduce", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(ReduceOp op, OpContext oc) {
    return rec(() -> super.exec(op, oc), op::opName, "reduce", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(ScalarOp op) {
    return rec(() -> super.exec(op), op::opName, "scalar", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(ScalarOp op, OpContext oc) {
    return rec(() -> super.exec(op, oc), op::opName, "scalar", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(BroadcastOp op) {
    return rec(() -> super.exec(op), op::opName, "broadcast", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(BroadcastOp op, OpContext oc) {
    return rec(() -> super.exec(op, oc), op::opName, "broadcast", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(IndexAccumulation op) {
    return rec(() -> super.exec(op), op::opName, "index", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(IndexAccumulation op, OpContext oc) {
    return rec(() -> super.exec(op, oc), op::opName, "index", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(Variance op) {
    return rec(() -> super.exec(op), op::opName, "reduce", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(RandomOp op) {
    return rec(() -> super.exec(op), op::opName, "random", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(RandomOp op, Random rng) {
    return rec(() -> super.exec(op, rng), op::opName, "random", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray exec(RandomOp op, OpContext oc, Random rng) {
    return rec(
        () -> super.exec(op, oc, rng), op::opName, "random", () -> ops(op), r -> one(r), null);
  }

  @Override
  public INDArray[] exec(CustomOp op) {
    return rec(
        () -> super.exec(op),
        op::opName,
        "custom",
        op::inputArguments,
        r -> r == null ? op.outputArguments() : Arrays.asList(r),
        op);
  }

  @Override
  public INDArray[] exec(CustomOp op, OpContext oc) {
    return rec(
        () -> super.exec(op, oc),
        op::opName,
        "custom",
        () -> oc.getInputArrays(),
        r -> r == null ? oc.getOutputArrays() : Arrays.asList(r),
        op);
  }
}
