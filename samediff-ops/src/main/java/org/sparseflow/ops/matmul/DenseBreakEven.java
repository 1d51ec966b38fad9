package org.sparseflow.ops.matmul;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The block density above which {@link SparseLinear} runs the dense product instead of the block
 * kernels, measured once per JVM on this host rather than fixed: the block kernel's forward and the
 * dense path ({@link DenseGemm}) are timed on a [1024 x 1024] x [1024 x 1024] fp32 product (32 x 32
 * blocks at density 0.25, best of a few runs each, about 50 ms in all), and the break-even density
 * is the ratio of their FLOP rates (the kernel's time scales with density, the dense time does
 * not), clamped to [0.05, 1]. {@code -Dsparseflow.denseAbove=<density>} fixes it instead.
 */
final class DenseBreakEven {

  private static final int SIZE = 1024;
  private static final double PROBE_DENSITY = 0.25;
  private static volatile double value = Double.NaN;

  private DenseBreakEven() {}

  /** The break-even density (measured at first call unless set by the system property). */
  static double get() {
    double v = value;
    if (Double.isNaN(v)) {
      synchronized (DenseBreakEven.class) {
        v = value;
        if (Double.isNaN(v)) {
          String fixed = System.getProperty("sparseflow.denseAbove");
          v = fixed != null ? Double.parseDouble(fixed) : measure();
          value = v;
        }
      }
    }
    return v;
  }

  /** Times the kernel against dense once and returns the break-even density (see class comment). */
  static double measure() {
    BlockMask mask = (BlockMask) PatternSpec.block(32).random(SIZE, SIZE, PROBE_DENSITY, 7);
    INDArray x = Nd4j.rand(DataType.FLOAT, SIZE, SIZE);
    INDArray w = Nd4j.rand(DataType.FLOAT, SIZE, SIZE);
    boolean vector = VectorSupport.applies(mask, x, w);
    INDArray xs = vector ? x : x.dup('f');
    INDArray y =
        Nd4j.createUninitialized(DataType.FLOAT, new long[] {SIZE, SIZE}, vector ? 'c' : 'f');
    Runnable sparse =
        vector
            ? () -> VectorBlockKernels.forward(xs, w, mask, y)
            : () -> BlockSparseKernels.forward(xs, w, mask, y, true);
    // the dense path as SparseLinear runs it (DenseGemm: one BLAS GEMM, no layout copies)
    INDArray yd = DenseGemm.output(DataType.FLOAT, SIZE, SIZE);
    Runnable dense = () -> DenseGemm.gemm(x, false, w, false, yd);
    // the JIT must have compiled the kernel first (interpreted vector code is ~100x slower):
    // repeat until the kernel's time stops improving (at most ~40 runs)
    double best = Double.MAX_VALUE;
    int sinceBest = 0;
    for (int r = 0; r < 30 && sinceBest < 5; r++) {
      double t = time(sparse);
      if (t < 0.9 * best) {
        best = t;
        sinceBest = 0;
      } else {
        sinceBest++;
      }
    }
    // the kernel's runs first, then the dense ones: after a threaded dense GEMM OpenBLAS's worker
    // spins for ~100 ms and would slow the kernel's next run (docs/experiments/kernels.md)
    double ts = best;
    for (int r = 0; r < 4; r++) {
      ts = Math.min(ts, time(sparse));
    }
    double td = Double.MAX_VALUE;
    for (int r = 0; r < 4; r++) {
      td = Math.min(td, time(dense));
    }
    double breakEven = mask.density() * td / ts;
    return Math.max(0.05, Math.min(1.0, breakEven));
  }

  private static double time(Runnable r) {
    long t0 = System.nanoTime();
    r.run();
    return System.nanoTime() - t0;
  }
}
