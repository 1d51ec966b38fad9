package org.sparseflow.bench.mst;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.BaseListener;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.sparseflow.bench.CpuClock;

/**
 * Per-op time of SameDiff training steps ({@code graph-step --model samediff --op-profile}): the
 * calling thread's CPU time between {@code preOpExecution} and {@code opExecution}, summed by op
 * name. With one kernel thread ({@code -Dsparseflow.threads=1}, {@code OMP_NUM_THREADS=1}) this is
 * the op's whole cost, and it is not inflated by other processes on a loaded machine.
 */
final class OpProfile extends BaseListener {
  private final Map<String, long[]> byOp = new HashMap<>();
  private long start;
  private boolean recording;

  @Override
  public boolean isActive(Operation operation) {
    return operation == Operation.TRAINING;
  }

  /** Whether the following steps are counted (off during warm-up). */
  void recording(boolean on) {
    recording = on;
  }

  @Override
  public void preOpExecution(SameDiff sd, At at, SameDiffOp op, OpContext opContext) {
    start = CpuClock.threadNanos();
  }

  @Override
  public void opExecution(
      SameDiff sd,
      At at,
      MultiDataSet batch,
      SameDiffOp op,
      OpContext opContext,
      INDArray[] outputs) {
    if (recording) {
      long[] a = byOp.computeIfAbsent(op.getOp().opName(), k -> new long[2]);
      a[0] += CpuClock.threadNanos() - start;
      a[1]++;
    }
  }

  /** Lines {@code OP <name> ms_per_step=.. share_pct=.. calls_per_step=..}, largest first. */
  List<String> report(int steps, int top) {
    long total = 0;
    for (long[] a : byOp.values()) {
      total += a[0];
    }
    List<Map.Entry<String, long[]>> sorted = new ArrayList<>(byOp.entrySet());
    sorted.sort((x, y) -> Long.compare(y.getValue()[0], x.getValue()[0]));
    List<String> out = new ArrayList<>();
    out.add(String.format(Locale.ROOT, "OP total ms_per_step=%.1f", total / 1e6 / steps));
    for (Map.Entry<String, long[]> e : sorted.subList(0, Math.min(top, sorted.size()))) {
      out.add(
          String.format(
              Locale.ROOT,
              "OP %s ms_per_step=%.1f share_pct=%.1f calls_per_step=%.0f",
              e.getKey(),
              e.getValue()[0] / 1e6 / steps,
              100.0 * e.getValue()[0] / Math.max(1, total),
              (double) e.getValue()[1] / steps));
    }
    return out;
  }
}
