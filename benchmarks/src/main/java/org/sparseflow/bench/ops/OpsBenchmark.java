package org.sparseflow.bench.ops;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.BlockSparseKernels;
import org.sparseflow.ops.matmul.SparseLinear;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Ops benchmark (measured, not simulated): block-sparse y = x (W o M) against ND4J's dense {@code
 * mmul} on the same machine, fp32, x [2048 x 1024], W [1024 x 4096], 32 x 32 blocks kept at random
 * (fixed seed) at densities 0.5 / 0.25 / 0.1 / 0.05. {@code fwd} times y = x W; {@code fwdbwd} adds
 * dx = dy W^T and dW = x^T dy (dense baseline: three GEMMs; sparse: dW on kept blocks only, plus
 * dBias and the NaN input checks). Dense and sparse runs alternate within each repetition so
 * machine-load drift hits both alike; reported times are medians in milliseconds after warm-up. The
 * dense baseline is the faster of 'c' and 'f' operand orders, with ND4J's default BLAS threads.
 *
 * <p>Because wall-clock times on a shared machine depend on its load, the {@code _cpu1} cases
 * repeat fwd and fwd+bwd with everything on one thread (BLAS, OpenMP and the sparse kernel) and
 * compare the CPU time of that thread ({@code ThreadMXBean}), minimum of the repetitions: the work
 * each implementation does, independent of how many other processes compete for the cores.
 *
 * <p>Also runs {@link AttentionBench#run(boolean)}. Run: {@code java -jar
 * benchmarks/target/sparseflow-benchmarks.jar ops [--quick]}.
 */
public final class OpsBenchmark {

  static final int N = 2048;
  static final int N_IN = 1024;
  static final int N_OUT = 4096;
  static final int BLOCK = 32;
  static final double[] DENSITIES = {0.5, 0.25, 0.1, 0.05};
  static final long SEED = 42;

  private OpsBenchmark() {}

  public static void main(String[] args) {
    boolean quick = Arrays.asList(args).contains("--quick");
    run(quick); // prints its RESULT lines as they are measured
    for (String line : runAttention(quick)) {
      System.out.println(line);
    }
  }

  /** Runs the matmul cases and returns the RESULT lines (also printed as they are measured). */
  public static List<String> run(boolean quick) {
    int warmup = quick ? 2 : 5;
    int reps = quick ? 5 : 15;
    Nd4j.getRandom().setSeed(SEED);
    INDArray xc = Nd4j.randn(DataType.FLOAT, N, N_IN);
    INDArray wc = Nd4j.randn(DataType.FLOAT, N_IN, N_OUT).muli(0.03);
    INDArray dyc = Nd4j.randn(DataType.FLOAT, N, N_OUT);
    INDArray xf = xc.dup('f'), wf = wc.dup('f'), dyf = dyc.dup('f');

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
            + "] fp32 block="
            + BLOCK
            + " "
            + machine
            + " kernel_threads="
            + BlockSparseKernels.threads()
            + (quick ? " (quick)" : ""));

    List<String> out = new ArrayList<>();
    for (double density : DENSITIES) {
      SparseMask mask = PatternSpec.block(BLOCK).random(N_IN, N_OUT, density, SEED);
      // the dense weights carry exact zeros outside the mask, as in training
      INDArray wMasked = mask.applyInPlace(wf.dup('f'));
      double[][] fwd =
          timeAlternating(
              warmup,
              reps,
              () -> xc.mmul(wc),
              () -> xf.mmul(wf),
              () -> SparseLinear.forward(xf, wMasked, null, mask));
      out.add(
          line(
              "matmul_fwd",
              density,
              mask,
              Math.min(median(fwd[0]), median(fwd[1])),
              median(fwd[2])));
      System.out.println(out.get(out.size() - 1));
      double[][] fb =
          timeAlternating(
              warmup,
              reps,
              () -> denseFwdBwd(xc, wc, dyc),
              () -> denseFwdBwd(xf, wf, dyf),
              () -> {
                SparseLinear.forward(xf, wMasked, null, mask);
                SparseLinear.backward(xf, wMasked, mask, dyf, false);
              });
      out.add(
          line(
              "matmul_fwdbwd",
              density,
              mask,
              Math.min(median(fb[0]), median(fb[1])),
              median(fb[2])));
      System.out.println(out.get(out.size() - 1));
    }
    out.addAll(runCpuTime(quick, xf, wf, dyf));
    return out;
  }

  /** Single-thread CPU-time comparison (see class comment). */
  static List<String> runCpuTime(boolean quick, INDArray x, INDArray w, INDArray dy) {
    int reps = quick ? 3 : 7;
    List<String> out = new ArrayList<>();
    org.nd4j.linalg.api.blas.Blas blas = Nd4j.factory().blas();
    int blasThreads = blas.getMaxThreads();
    int ompThreads =
        org.nd4j.nativeblas.NativeOpsHolder.getInstance().getDeviceNativeOps().ompGetMaxThreads();
    int kernelThreads = BlockSparseKernels.threads();
    try {
      blas.setMaxThreads(1);
      org.nd4j.nativeblas.NativeOpsHolder.getInstance().getDeviceNativeOps().setOmpNumThreads(1);
      BlockSparseKernels.setThreads(1);
      double denseFwd = cpuMin(reps, () -> x.mmul(w));
      double denseFb = cpuMin(reps, () -> denseFwdBwd(x, w, dy));
      for (double density : DENSITIES) {
        SparseMask mask = PatternSpec.block(BLOCK).random(N_IN, N_OUT, density, SEED);
        INDArray wMasked = mask.applyInPlace(w.dup('f'));
        double sf = cpuMin(reps, () -> SparseLinear.forward(x, wMasked, null, mask));
        double sfb =
            cpuMin(
                reps,
                () -> {
                  SparseLinear.forward(x, wMasked, null, mask);
                  SparseLinear.backward(x, wMasked, mask, dy, false);
                });
        out.add(cpuLine("matmul_fwd_cpu1", density, mask, denseFwd, sf));
        System.out.println(out.get(out.size() - 1));
        out.add(cpuLine("matmul_fwdbwd_cpu1", density, mask, denseFb, sfb));
        System.out.println(out.get(out.size() - 1));
      }
    } finally {
      blas.setMaxThreads(blasThreads);
      org.nd4j.nativeblas.NativeOpsHolder.getInstance()
          .getDeviceNativeOps()
          .setOmpNumThreads(ompThreads);
      BlockSparseKernels.setThreads(kernelThreads);
    }
    return out;
  }

  private static String cpuLine(
      String name, double density, SparseMask mask, double denseMs, double sparseMs) {
    return String.format(
        Locale.ROOT,
        "RESULT ops %s density=%.2f block=%d actual_density=%.4f dense_cpu_ms=%.1f"
            + " sparse_cpu_ms=%.1f speedup=%.2f threads=1 measured=true",
        name,
        density,
        BLOCK,
        mask.density(),
        denseMs,
        sparseMs,
        denseMs / sparseMs);
  }

  private static double cpuMin(int reps, Runnable task) {
    java.lang.management.ThreadMXBean tm = ManagementFactory.getThreadMXBean();
    task.run(); // warm-up
    double best = Double.MAX_VALUE;
    for (int r = 0; r < reps; r++) {
      long t0 = tm.getCurrentThreadCpuTime();
      task.run();
      best = Math.min(best, (tm.getCurrentThreadCpuTime() - t0) / 1e6);
    }
    return best;
  }

  private static void denseFwdBwd(INDArray x, INDArray w, INDArray dy) {
    x.mmul(w);
    dy.mmul(w.transpose());
    x.transpose().mmul(dy);
  }

  private static String line(
      String name, double density, SparseMask mask, double denseMs, double sparseMs) {
    return String.format(
        Locale.ROOT,
        "RESULT ops %s density=%.2f block=%d actual_density=%.4f dense_ms=%.1f sparse_ms=%.1f"
            + " speedup=%.2f measured=true",
        name,
        density,
        BLOCK,
        mask.density(),
        denseMs,
        sparseMs,
        denseMs / sparseMs);
  }

  /** Times each task once per repetition, in turn; returns per-task samples in ms. */
  private static double[][] timeAlternating(int warmup, int reps, Runnable... tasks) {
    for (int i = 0; i < warmup; i++) {
      for (Runnable t : tasks) {
        t.run();
      }
    }
    double[][] samples = new double[tasks.length][reps];
    for (int r = 0; r < reps; r++) {
      for (int k = 0; k < tasks.length; k++) {
        long t0 = System.nanoTime();
        tasks[k].run();
        samples[k][r] = (System.nanoTime() - t0) / 1e6;
      }
    }
    return samples;
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : 0.5 * (s[s.length / 2 - 1] + s[s.length / 2]);
  }

  /** Attention cases from {@link AttentionBench#run(boolean)}. */
  static List<String> runAttention(boolean quick) {
    return AttentionBench.run(quick);
  }
}
