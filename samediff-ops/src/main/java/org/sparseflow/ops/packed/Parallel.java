package org.sparseflow.ops.packed;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import org.sparseflow.ops.matmul.BlockSparseKernels;

/**
 * Splits a row range over the common fork-join pool, one chunk per kernel thread ({@link
 * BlockSparseKernels#threads()}, the same setting as the block-sparse kernels).
 */
final class Parallel {
  private Parallel() {}

  /** A body over rows [r0, r1). */
  interface Rows {
    void run(int r0, int r1);
  }

  /** A body over rows [r0, r1) accumulating into its own array acc. */
  interface Reduce {
    void run(int r0, int r1, double[] acc);
  }

  private static final int MIN_ROWS = 32;

  /** Chunks of at least MIN_ROWS rows, at most the kernels' thread count (-Dsparseflow.threads). */
  private static int chunks(int n) {
    return Math.max(1, Math.min(BlockSparseKernels.threads(), n / MIN_ROWS));
  }

  static void rows(int n, Rows body) {
    int k = chunks(n);
    if (k == 1) {
      body.run(0, n);
      return;
    }
    List<ForkJoinTask<?>> tasks = new ArrayList<>();
    for (int t = 0; t < k; t++) {
      int r0 = (int) ((long) n * t / k);
      int r1 = (int) ((long) n * (t + 1) / k);
      tasks.add(ForkJoinPool.commonPool().submit(() -> body.run(r0, r1)));
    }
    for (ForkJoinTask<?> t : tasks) {
      t.join();
    }
  }

  /** Runs body per chunk into a private zeroed array, then adds every array to out in order. */
  static void reduce(int n, int length, Reduce body, double[] out) {
    int k = chunks(n);
    if (k == 1) {
      body.run(0, n, out);
      return;
    }
    double[][] parts = new double[k][];
    List<ForkJoinTask<?>> tasks = new ArrayList<>();
    for (int t = 0; t < k; t++) {
      int r0 = (int) ((long) n * t / k);
      int r1 = (int) ((long) n * (t + 1) / k);
      double[] acc = t == 0 ? out : new double[length];
      parts[t] = acc;
      tasks.add(ForkJoinPool.commonPool().submit(() -> body.run(r0, r1, acc)));
    }
    for (ForkJoinTask<?> t : tasks) {
      t.join();
    }
    for (int t = 1; t < k; t++) {
      double[] p = parts[t];
      for (int i = 0; i < length; i++) {
        out[i] += p[i];
      }
    }
  }
}
