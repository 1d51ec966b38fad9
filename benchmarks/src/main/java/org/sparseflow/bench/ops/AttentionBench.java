package org.sparseflow.bench.ops;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.memory.conf.WorkspaceConfiguration;
import org.nd4j.linalg.api.memory.enums.AllocationPolicy;
import org.nd4j.linalg.api.memory.enums.LearningPolicy;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.bench.CpuClock;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;
import org.sparseflow.ops.matmul.BlockSparseKernels;

/**
 * Causal attention benchmark (measured, not simulated): batch 1, 8 heads of 64, fp32, block size
 * 64. Compares the block-sparse kernel ({@link SparseAttention}) on {@code local:128+strided:128}
 * with the same kernel on the dense causal layout ({@code dense_ms}, the baseline of {@code
 * speedup}) and, for reference, ND4J's dense matmul-softmax-matmul over the full {@code T x T}
 * scores with an additive causal mask ({@code nd4j_dense_ms}; its backward is the same formula
 * written with ND4J ops). Times are medians (and minima, {@code *_min_ms}) of repeated runs after a
 * JIT warm-up at T=512 and two warm-up runs per case, in milliseconds, each case's calls reusing
 * one ND4J workspace for their outputs (as in training); {@code *_cpu_ms} is the median process CPU
 * time (all threads), the work done, which other processes on a shared machine disturb far less
 * than wall time; each line also records the machine's load average, since the shared build machine
 * is often oversubscribed.
 *
 * <p>Run: {@code java --add-modules jdk.incubator.vector -cp
 * benchmarks/target/sparseflow-benchmarks.jar org.sparseflow.bench.ops.AttentionBench [--quick]}.
 */
public final class AttentionBench {

  static final String PATTERN = "local:128+strided:128";
  static final int HEADS = 8;
  static final int HEAD_DIM = 64;
  static final int BLOCK = 64;

  private AttentionBench() {}

  public static void main(String[] args) {
    run(Arrays.asList(args).contains("--quick")); // prints its RESULT lines as it goes
  }

  /** Sequence lengths: T=2048 in quick mode, 1024 and 2048 otherwise. */
  static int[] lengths(boolean quick) {
    return quick ? new int[] {2048} : new int[] {1024, 2048};
  }

  /** The PyTorch peer case ({@link TorchPeer}) for one of this benchmark's cases. */
  static String torchCase(String kase, int t) {
    return kase + ":" + t + ":" + HEADS + ":" + HEAD_DIM;
  }

  /** Runs the benchmark without a PyTorch peer. */
  public static List<String> run(boolean quick) {
    return run(quick, Map.of());
  }

  /**
   * Runs the benchmark; quick mode uses T=2048 only and fewer repetitions; {@code torchMs} holds
   * the PyTorch peer's medians by {@link #torchCase} (missing: no {@code speedup_vs_torch}).
   */
  public static List<String> run(boolean quick, Map<String, Double> torchMs) {
    int[] lengths = lengths(quick);
    int reps = quick ? 3 : 5;
    List<String> out = new ArrayList<>();
    warmUp();
    String machine = Runtime.getRuntime().availableProcessors() + "cores";
    for (int t : lengths) {
      Nd4j.getRandom().setSeed(42);
      INDArray q = Nd4j.randn(DataType.FLOAT, 1, HEADS, t, HEAD_DIM);
      INDArray k = Nd4j.randn(DataType.FLOAT, 1, HEADS, t, HEAD_DIM);
      INDArray v = Nd4j.randn(DataType.FLOAT, 1, HEADS, t, HEAD_DIM);
      INDArray dOut = Nd4j.randn(DataType.FLOAT, 1, HEADS, t, HEAD_DIM);
      double scale = SparseAttention.defaultScale(HEAD_DIM);
      BlockLayout dense = BlockLayout.dense(t, BLOCK, 1);
      BlockLayout sparse = AttentionPattern.parse(PATTERN).layout(t, BLOCK, 1);
      INDArray causalBias = causalBias(t);

      double[] denseFwd = time(reps, KERNEL_WARMUP, () -> forward(q, k, v, dense, scale));
      double[] sparseFwd = time(reps, KERNEL_WARMUP, () -> forward(q, k, v, sparse, scale));
      double[] nd4jFwd = time(reps, 1, () -> nd4jForward(q, k, v, causalBias, scale));
      double[] denseFb = time(reps, KERNEL_WARMUP, () -> fwdBwd(q, k, v, dOut, dense, scale));
      double[] sparseFb = time(reps, KERNEL_WARMUP, () -> fwdBwd(q, k, v, dOut, sparse, scale));
      double[] nd4jFb = time(reps, 1, () -> nd4jFwdBwd(q, k, v, dOut, causalBias, scale));

      // sanity: the kernel on the dense layout equals the ND4J reference
      double err =
          SparseAttention.forward(q, k, v, dense, scale)
              .out()
              .sub(nd4jForward(q, k, v, causalBias, scale)[0])
              .amaxNumber()
              .doubleValue();
      out.add(
          line(
              "attention_fwd",
              t,
              sparse,
              denseFwd,
              sparseFwd,
              nd4jFwd,
              machine,
              err,
              torchMs.get(torchCase("attention_fwd", t)),
              torchMs.get(torchCase("attention_fwd", t) + "#cpu")));
      System.out.println(out.get(out.size() - 1));
      out.add(
          line(
              "attention_fwdbwd",
              t,
              sparse,
              denseFb,
              sparseFb,
              nd4jFb,
              machine,
              err,
              torchMs.get(torchCase("attention_fwdbwd", t)),
              torchMs.get(torchCase("attention_fwdbwd", t) + "#cpu")));
      System.out.println(out.get(out.size() - 1));
    }
    return out;
  }

  /** Times are {median, min}; speedups are median over median and min over min. */
  /**
   * Runs every code path a few times on a small problem so the JIT has compiled them before timing.
   */
  private static void warmUp() {
    int t = 512;
    Nd4j.getRandom().setSeed(7);
    INDArray x = Nd4j.randn(DataType.FLOAT, 1, HEADS, t, HEAD_DIM);
    BlockLayout dense = BlockLayout.dense(t, BLOCK, 1);
    BlockLayout sparse = AttentionPattern.parse(PATTERN).layout(t, BLOCK, 1);
    INDArray bias = causalBias(t);
    for (int i = 0; i < 5; i++) {
      fwdBwd(x, x, x, x, dense, 0.125);
      fwdBwd(x, x, x, x, sparse, 0.125);
      nd4jFwdBwd(x, x, x, x, bias, 0.125);
    }
  }

  private static String line(
      String kase,
      int t,
      BlockLayout sparse,
      double[] dense,
      double[] sp,
      double[] nd4j,
      String machine,
      double err,
      Double torchMs,
      Double torchCpuMs) {
    return String.format(
        Locale.ROOT,
        "RESULT ops %s T=%d pattern=%s block=%d heads=%d headDim=%d dtype=FLOAT dense_ms=%.2f"
            + " sparse_ms=%.2f speedup=%.2f nd4j_dense_ms=%.2f speedup_vs_nd4j=%.2f"
            + " dense_min_ms=%.2f sparse_min_ms=%.2f speedup_min=%.2f nd4j_dense_min_ms=%.2f"
            + " dense_cpu_ms=%.1f sparse_cpu_ms=%.1f speedup_cpu=%.2f density=%.4f threads=%d"
            + " machine=%s load_avg=%.1f max_abs_diff_dense_vs_nd4j=%.2e%s %s measured=true",
        kase,
        t,
        PATTERN,
        BLOCK,
        HEADS,
        HEAD_DIM,
        dense[0],
        sp[0],
        dense[0] / sp[0],
        nd4j[0],
        nd4j[0] / sp[0],
        dense[1],
        sp[1],
        dense[1] / sp[1],
        nd4j[1],
        dense[2],
        sp[2],
        dense[2] / Math.max(1e-9, sp[2]),
        sparse.density(),
        BlockSparseKernels.THREADS,
        machine,
        ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
        err,
        torchMs != null
            ? String.format(
                Locale.ROOT,
                " torch_ms=%.2f speedup_vs_torch=%.2f torch_cpu_ms=%.1f speedup_vs_torch_cpu=%.2f",
                torchMs,
                torchMs / sp[0],
                torchCpuMs != null ? torchCpuMs : Double.NaN,
                torchCpuMs != null ? torchCpuMs / Math.max(1e-9, sp[2]) : Double.NaN)
            : "",
        HostInfo.fields());
  }

  /**
   * The forward pass as the SameDiff op and the DL4J layer call it: into outputs allocated in the
   * current (the case's) workspace, so repeated calls reuse the same memory. {@link
   * SparseAttention#forward} allocates detached outputs instead, and their first-touch page faults
   * (4 MB per call at T=2048) made the timings depend on the process's memory history.
   */
  private static SparseAttention.Result forward(
      INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    INDArray out = Nd4j.createUninitialized(q.dataType(), q.shape());
    INDArray lse = Nd4j.createUninitialized(q.dataType(), q.size(0), q.size(1), q.size(2));
    SparseAttention.forwardInto(q, k, v, layout, scale, out, lse);
    return new SparseAttention.Result(out, lse);
  }

  /** Forward and backward, all outputs in the current workspace (see {@link #forward}). */
  private static Object fwdBwd(
      INDArray q, INDArray k, INDArray v, INDArray dOut, BlockLayout layout, double scale) {
    SparseAttention.Result r = forward(q, k, v, layout, scale);
    INDArray dq = Nd4j.createUninitialized(q.dataType(), q.shape());
    INDArray dk = Nd4j.createUninitialized(q.dataType(), q.shape());
    INDArray dv = Nd4j.createUninitialized(q.dataType(), q.shape());
    SparseAttention.backwardInto(q, k, v, r.out(), r.lse(), dOut, layout, scale, dq, dk, dv);
    return dq;
  }

  private static INDArray causalBias(int t) {
    float[] m = new float[t * t];
    for (int i = 0; i < t; i++) {
      for (int j = i + 1; j < t; j++) {
        m[i * t + j] = -1e9f;
      }
    }
    return Nd4j.create(m, new long[] {1, 1, t, t}, DataType.FLOAT);
  }

  /** ND4J dense causal attention: returns {out, p}. */
  static INDArray[] nd4jForward(
      INDArray q, INDArray k, INDArray v, INDArray causalBias, double scale) {
    INDArray s =
        Nd4j.matmul(q, k, false, true, false)
            .muli(scale)
            .addi(causalBias.broadcast(q.size(0), q.size(1), q.size(2), q.size(2)));
    INDArray p = Nd4j.nn().softmax(s, 3);
    return new INDArray[] {Nd4j.matmul(p, v), p};
  }

  /** ND4J dense forward plus the softmax-attention backward with ND4J ops. */
  static INDArray[] nd4jFwdBwd(
      INDArray q, INDArray k, INDArray v, INDArray dOut, INDArray causalBias, double scale) {
    INDArray[] f = nd4jForward(q, k, v, causalBias, scale);
    INDArray o = f[0];
    INDArray p = f[1];
    INDArray dv = Nd4j.matmul(p, dOut, true, false, false);
    INDArray dp = Nd4j.matmul(dOut, v, false, true, false);
    INDArray rowDot = dOut.mul(o).sum(true, 3); // [B,H,T,1]
    INDArray ds = dp.subi(rowDot.broadcast(dp.shape())).muli(p);
    INDArray dq = Nd4j.matmul(ds, k).muli(scale);
    INDArray dk = Nd4j.matmul(ds, q, true, false, false).muli(scale);
    return new INDArray[] {dq, dk, dv};
  }

  /** Keeps each timed result reachable so the JIT cannot drop the work that produced it. */
  private static volatile Object sink;

  /**
   * {median, min} wall time and median process CPU time (all threads) in ms over {@code reps} runs
   * after {@code warmupCalls} untimed runs (fewer when they pass about 2.5 s). CPU time counts the
   * work done, so it moves much less than wall time when other processes compete for the cores.
   */
  private static double[] time(int reps, int warmupCalls, Supplier<Object> body) {
    // every call of one case runs in the same ND4J workspace, so its outputs reuse their memory
    // from one repetition to the next as in training; fresh outputs would time first-touch page
    // faults on the 4-16 MB arrays, whose cost swings widely on a shared VM (see Timing)
    String ws = "attention-bench-" + CASES.incrementAndGet();
    // warm-up (the first call also sizes the workspace): SparseFlow's Vector API kernels are slow
    // until C2 has compiled them, which took 20-25 calls of the sparse forward at T=2048 (26-125 ms
    // per call before, 19-23 ms after, docs/experiments/attention-warmup-2026-12-07-epyc.md), and
    // the sparse fwd+bwd about 40 (after 25 calls the suite timed 43-57 ms for what a long loop
    // runs at 28-32 ms); training runs thousands; the ND4J reference is native code and gets one
    // call
    long warmStart = System.nanoTime();
    for (int w = 0; w < warmupCalls; w++) {
      sink = inWorkspace(ws, body);
      if (System.nanoTime() - warmStart > WARMUP_NANOS_MAX) {
        break;
      }
    }
    double[] ms = new double[reps];
    double[] cpu = new double[reps];
    for (int r = 0; r < reps; r++) {
      long c0 = CpuClock.processNanos();
      long t0 = System.nanoTime();
      sink = inWorkspace(ws, body);
      ms[r] = (System.nanoTime() - t0) / 1e6;
      cpu[r] = (CpuClock.processNanos() - c0) / 1e6;
    }
    Nd4j.getWorkspaceManager()
        .destroyWorkspace(Nd4j.getWorkspaceManager().getWorkspaceForCurrentThread(ws));
    Arrays.sort(ms);
    Arrays.sort(cpu);
    return new double[] {ms[reps / 2], ms[0], cpu[reps / 2]};
  }

  private static final AtomicInteger CASES = new AtomicInteger();

  /** Untimed calls before each timed SparseFlow kernel case (fewer if they pass ~2.5 s). */
  private static final int KERNEL_WARMUP = 60;

  private static final long WARMUP_NANOS_MAX = 2_500_000_000L;

  private static final WorkspaceConfiguration WS =
      WorkspaceConfiguration.builder()
          .policyAllocation(AllocationPolicy.STRICT)
          .policyLearning(LearningPolicy.FIRST_LOOP)
          .build();

  /**
   * Runs body in workspace {@code id}; its result only keeps the call from being optimised away.
   */
  private static Object inWorkspace(String id, Supplier<Object> body) {
    MemoryWorkspace w = Nd4j.getWorkspaceManager().getAndActivateWorkspace(WS, id);
    try {
      return body.get() != null;
    } finally {
      w.close();
    }
  }
}
