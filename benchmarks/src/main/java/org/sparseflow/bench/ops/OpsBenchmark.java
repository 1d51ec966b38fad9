package org.sparseflow.bench.ops;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.nativeblas.NativeOpsHolder;
import org.sparseflow.bench.BenchOptions;
import org.sparseflow.ops.matmul.BlockSparseKernels;
import org.sparseflow.ops.matmul.SparseLinear;
import org.sparseflow.ops.matmul.VectorSupport;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Ops benchmark (measured, not simulated): block-sparse y = x (W o M) against ND4J's dense {@code
 * mmul} on the same machine, fp32, x [2048 x 1024], W [1024 x 4096], 32 x 32 blocks kept at random
 * (fixed seed) at densities 1 / 0.5 / 0.25 / 0.1 / 0.05, and blocks of 16 and 64 at 0.1. {@code
 * fwd} times y = x W; {@code fwdbwd} adds dx = dy W^T and dW = x^T dy (dense baseline: three GEMMs;
 * sparse: dW on kept blocks only, plus dBias and the NaN input checks). Dense and sparse runs
 * alternate within each repetition so machine-load drift hits both alike; reported times are
 * medians in milliseconds after warm-up. The dense baseline is the faster of 'c' and 'f' operand
 * orders, with ND4J's default BLAS threads. Each timed call runs in an ND4J workspace of its own so
 * outputs reuse their memory as in DL4J training ({@code --fresh-outputs} allocates them anew), and
 * each sparse run starts after a short busy-wait ({@code --settle-ms}) so that OpenBLAS's worker,
 * spinning after the dense GEMMs, does not share the cores with it. Every timed call, dense or
 * sparse, follows an untimed call of the same case ({@code --lead-calls}), so all are timed back to
 * back as in training and as the PyTorch peer is; see {@link Timing}.
 *
 * <p>At block 32 and densities up to 0.25, {@code matmul_fwdbwd_packed} times the same fwd+bwd on
 * packed storage (W held as its kept blocks only, {@link PackedBlockLinear}), in the same
 * alternation and against the same dense baseline as the masked-storage line.
 *
 * <p>When a python3 with torch is found, PyTorch's dense CPU matmul and causal attention run first
 * on the same shapes and thread count with this JVM's environment ({@link TorchPeer}); the lines
 * then carry {@code torch_ms} and {@code speedup_vs_torch}. Every RESULT line names the host
 * ({@link HostInfo}). {@code efficiency} = the sparse useful FLOP/s over the best dense FLOP/s on
 * the host at that shape.
 *
 * <p>The full run also repeats fwd and fwd+bwd with everything on one thread ({@code _cpu1}) and
 * compares the CPU time of that thread ({@code ThreadMXBean}), minimum of the repetitions: the work
 * each implementation does, independent of how many other processes compete for the cores.
 *
 * <p>Then runs {@link AttentionBench} (T=2048 in quick mode). Run: {@code java --add-modules
 * jdk.incubator.vector -jar benchmarks/target/sparseflow-benchmarks.jar ops [--quick]
 * [--fresh-outputs] [--settle-ms MS] [--lead-calls N]} (without the flag the BLAS block kernels run
 * instead of the Vector API ones).
 */
public final class OpsBenchmark {

  static final int N = 2048;
  static final int N_IN = 1024;
  static final int N_OUT = 4096;
  static final int BLOCK = 32;
  static final double[] DENSITIES = {1.0, 0.5, 0.25, 0.1, 0.05};
  static final double[] QUICK_DENSITIES = {1.0, 0.25, 0.1, 0.05};

  /** Other block sizes, timed fwd+bwd at density 0.10. */
  static final int[] OTHER_BLOCKS = {16, 64};

  static final long SEED = 42;

  /** The dense tasks that open every alternation: ND4J on 'c' and on 'f' operands. */
  private static final int DENSE_TASKS = 2;

  private OpsBenchmark() {}

  public static void main(String[] args) {
    OpsOptions opts = new OpsOptions();
    if (!BenchOptions.parse(opts, args, null, System.out)) {
      return;
    }
    opts.validate();
    TorchPeer torch = TorchPeer.find();
    Map<String, Double> torchMs = runTorch(torch, opts.quick);
    run(opts, torchMs); // prints its RESULT lines as they are measured
    AttentionBench.run(opts.quick, torchMs); // prints its RESULT lines as they are measured
  }

  /**
   * Times the PyTorch dense peer (matmul and causal attention, same shapes and threads) before the
   * Java cases, so that its process does not compete with them; prints a note without torch.
   */
  static Map<String, Double> runTorch(TorchPeer torch, boolean quick) {
    System.out.println("# " + torch.note());
    if (!torch.available()) {
      return new HashMap<>();
    }
    List<String> cases = new ArrayList<>();
    cases.add(torchMatmul("matmul_fwd"));
    cases.add(torchMatmul("matmul_fwdbwd"));
    for (int t : AttentionBench.lengths(quick)) {
      cases.add(AttentionBench.torchCase("attention_fwd", t));
      cases.add(AttentionBench.torchCase("attention_fwdbwd", t));
    }
    Map<String, Double> out =
        torch.run(BlockSparseKernels.threads(), quick ? 1 : 2, quick ? 3 : 7, cases);
    // one thread, for the CPU-time (_cpu1) comparison
    Map<String, Double> one =
        torch.run(1, 1, 3, List.of(torchMatmul("matmul_fwd"), torchMatmul("matmul_fwdbwd")));
    one.forEach((k, v) -> out.put("1thread:" + k, v));
    return out;
  }

  static String torchMatmul(String kase) {
    return kase + ":" + N + ":" + N_IN + ":" + N_OUT;
  }

  /** Runs the matmul cases and returns the RESULT lines (also printed as they are measured). */
  static List<String> run(OpsOptions opts, Map<String, Double> torchMs) {
    boolean quick = opts.quick;
    Timing timing = new Timing(!opts.freshOutputs, opts.settleMs, opts.leadCalls);
    int warmup = quick ? 2 : 5;
    int reps = quick ? 5 : 15;
    Nd4j.getRandom().setSeed(SEED);
    INDArray xc = Nd4j.randn(DataType.FLOAT, N, N_IN);
    INDArray wc = Nd4j.randn(DataType.FLOAT, N_IN, N_OUT).muli(0.03);
    INDArray dyc = Nd4j.randn(DataType.FLOAT, N, N_OUT);
    INDArray xf = xc.dup('f'), wf = wc.dup('f'), dyf = dyc.dup('f');
    // each kernel gets the activation layout it reads directly: token rows for the vector
    // kernel, column panels for the BLAS kernel (the dense baseline takes the faster of both)
    INDArray xs = VectorSupport.AVAILABLE ? xc : xf;
    INDArray dys = VectorSupport.AVAILABLE ? dyc : dyf;

    String machine =
        String.format(
            Locale.ROOT,
            "cores=%d load=%.1f",
            Runtime.getRuntime().availableProcessors(),
            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    System.out.println(
        "# ops benchmark: x["
            + N
            + "x"
            + N_IN
            + "] W["
            + N_IN
            + "x"
            + N_OUT
            + "] fp32 "
            + machine
            + " kernel_threads="
            + BlockSparseKernels.threads()
            + " "
            + HostInfo.fields()
            + " break_even_density="
            + String.format(Locale.ROOT, "%.2f", SparseLinear.denseAbove())
            + " outputs="
            + (opts.freshOutputs ? "fresh" : "workspace")
            + " settle_ms="
            + opts.settleMs
            + (quick ? " (quick)" : ""));
    if (!VectorSupport.AVAILABLE) {
      System.out.println(
          "# note: the JDK Vector API kernels are off; start java with --add-modules"
              + " jdk.incubator.vector to use them");
    }
    List<double[]> cases = new ArrayList<>();
    for (double d : quick ? QUICK_DENSITIES : DENSITIES) {
      cases.add(new double[] {d, BLOCK});
    }
    for (int b : OTHER_BLOCKS) {
      cases.add(new double[] {0.1, b});
    }
    List<String> out = new ArrayList<>();
    for (double[] c : cases) {
      double density = c[0];
      int block = (int) c[1];
      SparseMask mask = PatternSpec.block(block).random(N_IN, N_OUT, density, SEED);
      // the dense weights carry exact zeros outside the mask, as in training
      INDArray wMasked = mask.applyInPlace(wc.dup(VectorSupport.AVAILABLE ? 'c' : 'f'));
      if (block == BLOCK) {
        double[][] fwd =
            timing.alternating(
                warmup,
                reps,
                DENSE_TASKS,
                () -> xc.mmul(wc),
                () -> xf.mmul(wf),
                () -> SparseLinear.forward(xs, wMasked, null, mask));
        double denseMs = Math.min(median(fwd[0]), median(fwd[1]));
        emit(out, line("matmul_fwd", density, block, mask, denseMs, median(fwd[2]), torchMs));
      }
      Runnable dense1 = () -> denseFwdBwd(xc, wc, dyc);
      Runnable dense2 = () -> denseFwdBwd(xf, wf, dyf);
      Runnable masked =
          () -> {
            SparseLinear.forward(xs, wMasked, null, mask);
            SparseLinear.backward(xs, wMasked, mask, dys, false);
          };
      // packed storage (issue 23: the kernel targets must hold on it too), block 32 below the
      // break-even density, in the same alternation as masked storage
      boolean packed = block == BLOCK && density <= 0.25;
      double[][] fb =
          packed
              ? timing.alternating(
                  warmup,
                  reps,
                  DENSE_TASKS,
                  dense1,
                  dense2,
                  masked,
                  packedFwdBwd(xs, dys, wMasked, mask))
              : timing.alternating(warmup, reps, DENSE_TASKS, dense1, dense2, masked);
      double denseMs = Math.min(median(fb[0]), median(fb[1]));
      emit(out, line("matmul_fwdbwd", density, block, mask, denseMs, median(fb[2]), torchMs));
      if (packed) {
        Double torch = torchMs.get(torchMatmul("matmul_fwdbwd"));
        emit(
            out,
            result(
                "matmul_fwdbwd_packed",
                density,
                block,
                mask,
                denseMs,
                median(fb[3]),
                torch,
                "",
                BlockSparseKernels.threads()));
      }
    }
    out.addAll(runCpuTime(quick, timing, xs, wc, dys, torchMs));
    return out;
  }

  /** Single-thread CPU-time comparison (see class comment). */
  static List<String> runCpuTime(
      boolean quick,
      Timing timing,
      INDArray x,
      INDArray w,
      INDArray dy,
      Map<String, Double> torchMs) {
    int reps = quick ? 3 : 7;
    List<String> out = new ArrayList<>();
    Blas blas = Nd4j.factory().blas();
    int blasThreads = blas.getMaxThreads();
    int ompThreads = NativeOpsHolder.getInstance().getDeviceNativeOps().ompGetMaxThreads();
    int kernelThreads = BlockSparseKernels.threads();
    try {
      blas.setMaxThreads(1);
      NativeOpsHolder.getInstance().getDeviceNativeOps().setOmpNumThreads(1);
      BlockSparseKernels.setThreads(1);
      double denseFwd = timing.cpuMin(reps, () -> x.mmul(w));
      double denseFb = timing.cpuMin(reps, () -> denseFwdBwd(x, w, dy));
      for (double density : quick ? new double[] {0.1, 0.05} : DENSITIES) {
        SparseMask mask = PatternSpec.block(BLOCK).random(N_IN, N_OUT, density, SEED);
        INDArray wMasked = mask.applyInPlace(w.dup(VectorSupport.AVAILABLE ? 'c' : 'f'));
        double sf = timing.cpuMin(reps, () -> SparseLinear.forward(x, wMasked, null, mask));
        double sfb =
            timing.cpuMin(
                reps,
                () -> {
                  SparseLinear.forward(x, wMasked, null, mask);
                  SparseLinear.backward(x, wMasked, mask, dy, false);
                });
        emit(out, cpuLine("matmul_fwd", density, mask, denseFwd, sf, torchMs));
        emit(out, cpuLine("matmul_fwdbwd", density, mask, denseFb, sfb, torchMs));
      }
    } finally {
      blas.setMaxThreads(blasThreads);
      NativeOpsHolder.getInstance().getDeviceNativeOps().setOmpNumThreads(ompThreads);
      BlockSparseKernels.setThreads(kernelThreads);
    }
    return out;
  }

  /**
   * A one-thread CPU-time line of matmul case {@code kase} (named {@code <kase>_cpu1}); the torch
   * peer's figure is its process CPU time on one thread.
   */
  private static String cpuLine(
      String kase,
      double density,
      SparseMask mask,
      double denseMs,
      double sparseMs,
      Map<String, Double> torchMs) {
    Double torch = torchMs.get("1thread:" + torchMatmul(kase) + "#cpu");
    return result(kase + "_cpu1", density, BLOCK, mask, denseMs, sparseMs, torch, "_cpu", 1);
  }

  /**
   * Forward and backward (dX and dW of the kept blocks) on packed storage: W held as its kept
   * blocks only ({@link PackedBlockLinear}), outputs in the timing workspace like the masked
   * case's.
   */
  private static Runnable packedFwdBwd(INDArray x, INDArray dy, INDArray wMasked, SparseMask mask) {
    PackedLayout layout = PackedLayout.of((BlockMask) mask);
    INDArray values = PackedBlockLinear.pack(wMasked.dup('c'), layout);
    INDArray dValues = Nd4j.createUninitialized(values.dataType(), values.shape());
    return () -> {
      INDArray y = Nd4j.createUninitialized(DataType.FLOAT, x.size(0), layout.cols());
      PackedBlockLinear.forwardInto(x, values, null, layout, y);
      INDArray dx = Nd4j.createUninitialized(DataType.FLOAT, x.size(0), layout.rows());
      PackedBlockLinear.backwardInto(x, values, layout, dy, dValues, dx);
    };
  }

  /** Adds a RESULT line to {@code out} and prints it as soon as it is measured. */
  private static void emit(List<String> out, String line) {
    out.add(line);
    System.out.println(line);
  }

  private static void denseFwdBwd(INDArray x, INDArray w, INDArray dy) {
    x.mmul(w);
    dy.mmul(w.transpose());
    x.transpose().mmul(dy);
  }

  /** A RESULT line of matmul case {@code kase} at the kernels' thread count. */
  private static String line(
      String kase,
      double density,
      int block,
      SparseMask mask,
      double denseMs,
      double sparseMs,
      Map<String, Double> torchMs) {
    Double torch = torchMs.get(torchMatmul(kase));
    int threads = BlockSparseKernels.threads();
    return result(kase, density, block, mask, denseMs, sparseMs, torch, "", threads);
  }

  /**
   * A RESULT line, times named {@code dense<clock>_ms}, {@code sparse<clock>_ms} and {@code
   * torch<clock>_ms} ({@code clock} "" for wall time, "_cpu" for CPU time). {@code efficiency} is
   * the sparse kernel's useful FLOP/s (kept blocks only) over the best dense FLOP/s measured on
   * this host at the same shape (ND4J, or PyTorch when faster): actual density x best dense ms /
   * sparse ms.
   */
  private static String result(
      String name,
      double density,
      int block,
      SparseMask mask,
      double denseMs,
      double sparseMs,
      Double torchMs,
      String clock,
      int threads) {
    double bestDense = torchMs != null ? Math.min(denseMs, torchMs) : denseMs;
    String torch =
        torchMs != null
            ? String.format(
                Locale.ROOT,
                " torch%s_ms=%.1f speedup_vs_torch=%.2f",
                clock,
                torchMs,
                torchMs / sparseMs)
            : "";
    return String.format(
        Locale.ROOT,
        "RESULT ops %s density=%.2f block=%d actual_density=%.4f dense%s_ms=%.1f sparse%s_ms=%.1f"
            + " speedup=%.2f%s efficiency=%.2f threads=%d %s measured=true",
        name,
        density,
        block,
        mask.density(),
        clock,
        denseMs,
        clock,
        sparseMs,
        denseMs / sparseMs,
        torch,
        mask.density() * bestDense / sparseMs,
        threads,
        HostInfo.fields());
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : 0.5 * (s[s.length / 2 - 1] + s[s.length / 2]);
  }
}
