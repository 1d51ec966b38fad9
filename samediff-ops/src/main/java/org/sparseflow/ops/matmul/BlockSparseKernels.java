package org.sparseflow.ops.matmul;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.ops.backend.Backends;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * Block-sparse GEMM kernels for the ND4J CPU backend. Work is proportional to the kept blocks: each
 * kept (run of) b x b block(s) is one single-threaded BLAS call on strided panels of the dense
 * operands (no gather copies), and calls are spread over Java threads by output panel. Outputs can
 * be written without clearing them first (beta = 0 on the first call per panel), and each output
 * panel is probed for NaN while it is still in cache, so no pass over the dense operands is needed
 * for validation. While a kernel runs, OpenBLAS is set to one thread (many small GEMMs lose most of
 * their time to BLAS threading, see docs/benchmarks-ops.md) and the previous thread count is
 * restored afterwards.
 *
 * <p>Operands may be 'c' or 'f' ordered (or views with one unit stride); anything else is copied
 * once.
 */
public final class BlockSparseKernels {

  private static final Logger LOG = LoggerFactory.getLogger(BlockSparseKernels.class);

  /** Default number of Java threads: {@code -Dsparseflow.threads=N}, else the core count. */
  public static final int THREADS =
      Math.max(
          1, Integer.getInteger("sparseflow.threads", Runtime.getRuntime().availableProcessors()));

  private static final int MAX_THREADS =
      Math.max(THREADS, Runtime.getRuntime().availableProcessors());
  private static volatile int threads = THREADS;

  /**
   * True on the pool's threads: a parallel loop started from inside a worker's task runs serially
   * there (its tasks would wait in the queue behind the very task that waits for them).
   */
  private static final ThreadLocal<Boolean> IN_WORKER = ThreadLocal.withInitial(() -> false);

  private static final ExecutorService POOL =
      MAX_THREADS > 1
          ? Executors.newFixedThreadPool(
              MAX_THREADS - 1,
              r -> {
                Thread t =
                    new Thread(
                        () -> {
                          IN_WORKER.set(Boolean.TRUE);
                          r.run();
                        },
                        "sparseflow-kernel");
                t.setDaemon(true);
                return t;
              })
          : null;

  /** Serializes kernels so the BLAS thread-count switch is never interleaved. */
  private static final Object LOCK = new Object();

  /** Java threads the kernels currently use. */
  public static int threads() {
    return threads;
  }

  /** Sets the number of Java threads (1 = run on the calling thread, BLAS threads untouched). */
  public static void setThreads(int n) {
    if (n < 1 || n > MAX_THREADS) {
      throw new IllegalArgumentException("threads = " + n + "; allowed: 1.." + MAX_THREADS);
    }
    threads = n;
  }

  private BlockSparseKernels() {}

  /**
   * True when the fast path applies: CPU backend with OpenBLAS, FLOAT or DOUBLE operands of one
   * type.
   */
  public static boolean supports(INDArray... arrays) {
    if (!isCpuOpenBlas()) {
      return false;
    }
    DataType dt = arrays[0].dataType();
    if (dt != DataType.FLOAT && dt != DataType.DOUBLE) {
      return false;
    }
    for (INDArray a : arrays) {
      if (a.dataType() != dt || a.rank() != 2 || a.isEmpty()) {
        return false;
      }
    }
    return true;
  }

  private static boolean isCpuOpenBlas() {
    return Backends.isCpuOpenBlas();
  }

  // ------------------------------------------------------------------ public kernels

  /**
   * What a kernel found when it summed each output panel it wrote while the panel was still in
   * cache: one BLAS {@code ?asum} per panel, so a NaN that reached the output through a kept block
   * is detected at almost no cost (a NaN in a pruned weight or in activations that no kept block
   * reads does not matter and is not reported).
   */
  public enum Probe {
    CLEAN,
    NAN
  }

  /**
   * y = x (W o M). With {@code overwrite} the previous content of y is ignored (y may be
   * uninitialised memory: the first GEMM of each output panel runs with beta = 0 and panels without
   * kept blocks are cleared), otherwise the product is added to y. Returns whether y now contains
   * NaN.
   */
  public static Probe forward(
      INDArray x, INDArray w, BlockMask mask, INDArray y, boolean overwrite) {
    // unit of work: one output column block j (all its gemms write y[:, jb]);
    // y[:, c0:c0+b] (+)= x[:, r0:r0+len] * W[r0:r0+len, c0:c0+b] for each run of kept row blocks
    return keptBlockProduct(
        x,
        StridedBlas.Mat.of(w),
        mask.blockCols(),
        mask.blockRows(),
        mask.blockSize(),
        j -> ib -> mask.isBlockKept(ib, j),
        y,
        overwrite);
  }

  /**
   * dx = dy (W o M)^T, overwriting dx when {@code overwrite}, else adding to it (see {@link
   * #forward}); returns whether dx has NaN.
   */
  public static Probe inputGrad(
      INDArray dy, INDArray w, BlockMask mask, INDArray dx, boolean overwrite) {
    // unit of work: one input row block i (all its gemms write dx[:, ib]), i.e. a column block of
    // W^T; dx[:, r0:r0+b] (+)= dy[:, c0:c0+len] * (W[r0:r0+b, c0:c0+len])^T for each run of kept
    // column blocks
    return keptBlockProduct(
        dy,
        StridedBlas.Mat.of(w).t(),
        mask.blockRows(),
        mask.blockCols(),
        mask.blockSize(),
        i -> jb -> mask.isBlockKept(i, jb),
        dx,
        overwrite);
  }

  /**
   * out (+)= a w over the kept blocks of w, one output column panel of width b at a time: the body
   * of {@link #forward} (w = W) and {@link #inputGrad} (w = W^T, the mask read transposed). {@code
   * kept.apply(panel).test(block)}: whether block {@code block} of the runs (the rows of w) is kept
   * in output panel {@code panel}.
   */
  private static Probe keptBlockProduct(
      INDArray a,
      StridedBlas.Mat mw,
      int panels,
      int runBlocks,
      int b,
      IntFunction<IntPredicate> kept,
      INDArray out,
      boolean overwrite) {
    final int n = (int) a.size(0);
    StridedBlas.Mat ma = StridedBlas.Mat.of(a), mo = StridedBlas.Mat.of(out);
    // a contiguous row-major output is probed once as a whole after all panels: a row-major panel
    // is b-wide rows far apart, and probing it per panel cost ~8% of a gpt-mini training step
    int cols = (int) out.size(1);
    boolean whole = overwrite && mo.cs == 1 && mo.rs == cols;
    Probe p =
        runPanels(
            panels,
            runBlocks,
            b,
            kept,
            overwrite,
            (j, r0, len, beta) ->
                StridedBlas.gemm(
                    n,
                    b,
                    len,
                    ma.sub(0, r0),
                    mw.sub(r0, (long) j * b),
                    mo.sub(0, (long) j * b),
                    beta),
            j -> mo.sub(0, (long) j * b),
            n,
            b,
            !whole);
    if (whole && Double.isNaN(probeSum(out))) {
      return Probe.NAN;
    }
    return p;
  }

  /**
   * dW = x^T dy on kept blocks only (written with beta = 0); entries outside the mask are not
   * touched.
   */
  public static void weightGradKept(INDArray x, INDArray dy, BlockMask mask, INDArray dW) {
    final int b = mask.blockSize();
    final int n = (int) x.size(0);
    StridedBlas.Mat mxt = StridedBlas.Mat.of(x).t(),
        mdy = StridedBlas.Mat.of(dy),
        mdw = StridedBlas.Mat.of(dW);
    // dW[r0:r0+len, c0:c0+b] = x[:, r0:r0+len]^T * dy[:, c0:c0+b]
    runPanels(
        mask.blockCols(),
        mask.blockRows(),
        b,
        j -> ib -> mask.isBlockKept(ib, j),
        false,
        (j, r0, len, beta) ->
            StridedBlas.gemm(
                len,
                b,
                n,
                mxt.sub(r0, 0),
                mdy.sub(0, (long) j * b),
                mdw.sub(r0, (long) j * b),
                0.0),
        null,
        0,
        0,
        true);
  }

  /**
   * One BLAS call for output panel p on a run of kept blocks [start, start+len) (in elements), with
   * beta.
   */
  private interface RunCall {
    void call(int panel, int start, int len, double beta);
  }

  /**
   * Runs one work unit per output panel p in [0, panels): the GEMM calls for every maximal run of
   * kept blocks {@code kept.apply(p)} over [0, depth) blocks of size b (first with beta 0 when
   * overwriting, panels with no kept block cleared), then, when {@code panelOf} is given, sums the
   * panel (rows x cols) to probe for NaN; {@code probe = false} skips the per-panel NaN probe (the
   * caller probes the whole output).
   */
  private static Probe runPanels(
      int panels,
      int depth,
      int b,
      IntFunction<IntPredicate> kept,
      boolean overwrite,
      RunCall call,
      IntFunction<StridedBlas.Mat> panelOf,
      int rows,
      int cols,
      boolean probe) {
    List<List<Runnable>> bins = new ArrayList<>();
    long[] cost = newBins(bins);
    AtomicBoolean nan = new AtomicBoolean();
    for (int p = 0; p < panels; p++) {
      final int panel = p;
      List<int[]> runs = new ArrayList<>();
      IntPredicate k = kept.apply(panel);
      int keptCount = forEachRun(depth, k, (s0, count) -> runs.add(new int[] {s0, count}));
      if (runs.isEmpty() && !overwrite) {
        continue;
      }
      Runnable unit =
          () -> {
            if (runs.isEmpty()) {
              StridedBlas.zero(panelOf.apply(panel), rows, cols);
              return;
            }
            for (int r = 0; r < runs.size(); r++) {
              int[] run = runs.get(r);
              call.call(panel, run[0] * b, run[1] * b, r == 0 && overwrite ? 0.0 : 1.0);
            }
            if (probe
                && panelOf != null
                && Double.isNaN(StridedBlas.asum(panelOf.apply(panel), rows, cols))) {
              nan.set(true);
            }
          };
      addUnit(bins, cost, List.of(unit), Math.max(1, keptCount));
    }
    run(bins);
    return nan.get() ? Probe.NAN : Probe.CLEAN;
  }

  /**
   * Calls {@code run(start, count)} for each maximal run of kept indices in [0, size); returns the
   * kept count.
   */
  private static int forEachRun(int size, IntPredicate kept, BiConsumer<Integer, Integer> run) {
    int total = 0;
    for (int i = 0; i < size; ) {
      if (!kept.test(i)) {
        i++;
        continue;
      }
      int i0 = i;
      while (i < size && kept.test(i)) {
        i++;
      }
      run.accept(i0, i - i0);
      total += i - i0;
    }
    return total;
  }

  /**
   * A number that is NaN when {@code a} holds a NaN and infinite when it holds an infinity (it may
   * also be infinite by overflow, so callers confirm before they report): the sum of |a| in Java
   * over a contiguous float or double array ({@link NanProbe}: no OpenBLAS call, so no OpenBLAS
   * worker left spinning), else ND4J's sum.
   */
  public static double probeSum(INDArray a) {
    return NanProbe.applies(a) ? NanProbe.absSum(a) : a.sumNumber().doubleValue();
  }

  /** Returns a, or a copy in 'f' order when a's strides cannot be handed to BLAS directly. */
  public static INDArray blasCompatible(INDArray a) {
    long rs = a.stride(0), cs = a.stride(1), rows = a.size(0), cols = a.size(1);
    if ((rs == 1 && cs >= Math.max(1, rows)) || (cs == 1 && rs >= Math.max(1, cols))) {
      return a;
    }
    return a.dup('f');
  }

  // ------------------------------------------------------------------ scheduling

  private static long[] newBins(List<List<Runnable>> bins) {
    int n = threads;
    for (int t = 0; t < n; t++) {
      bins.add(new ArrayList<>());
    }
    return new long[n];
  }

  /** Greedy balancing: a unit goes to the least loaded bin (units arrive in index order). */
  private static void addUnit(
      List<List<Runnable>> bins, long[] cost, List<Runnable> unit, int weight) {
    if (unit.isEmpty()) {
      return;
    }
    int best = 0;
    for (int t = 1; t < cost.length; t++) {
      if (cost[t] < cost[best]) {
        best = t;
      }
    }
    bins.get(best).addAll(unit);
    cost[best] += weight;
  }

  private static void run(List<List<Runnable>> bins) {
    synchronized (LOCK) {
      Blas blas = Nd4j.factory().blas();
      int previous = blas.getMaxThreads();
      boolean switchThreads = bins.size() > 1 && previous != 1;
      if (switchThreads) {
        blas.setMaxThreads(1);
      }
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 1; t < bins.size(); t++) {
          List<Runnable> bin = bins.get(t);
          if (!bin.isEmpty()) {
            futures.add(POOL.submit(() -> bin.forEach(Runnable::run)));
          }
        }
        bins.get(0).forEach(Runnable::run);
        RuntimeException failure = awaitAll(futures, null);
        if (failure != null) {
          throw failure;
        }
      } finally {
        if (switchThreads) {
          blas.setMaxThreads(previous);
        }
      }
    }
  }

  /** Body of a parallel loop: iteration i, run by worker {@code worker} (0 .. threads() - 1). */
  interface WorkerBody {
    void run(int worker, int i);
  }

  /**
   * Runs body for i in [0, n), claimed in index order by up to {@link #threads()} workers (the
   * caller is worker 0); returns the number of workers used. No BLAS thread switch: for Java-only
   * kernels.
   */
  static int parallelFor(int n, WorkerBody body) {
    int workers = Math.min(threads, n);
    if (workers <= 1 || IN_WORKER.get()) {
      for (int i = 0; i < n; i++) {
        body.run(0, i);
      }
      return 1;
    }
    AtomicInteger next = new AtomicInteger();
    List<Future<?>> futures = new ArrayList<>();
    for (int t = 1; t < workers; t++) {
      final int worker = t;
      futures.add(
          POOL.submit(
              () -> {
                for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
                  body.run(worker, i);
                }
              }));
    }
    RuntimeException failure = null;
    try {
      for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
        body.run(0, i);
      }
    } catch (RuntimeException e) {
      failure = e;
      next.set(n);
    }
    failure = awaitAll(futures, failure);
    if (failure != null) {
      throw failure;
    }
    return workers;
  }

  /**
   * Waits for every worker task; returns {@code failure} if not null, else the first task's failure
   * (wrapped), else null. An interrupt ends the wait with an exception.
   */
  private static RuntimeException awaitAll(List<Future<?>> futures, RuntimeException failure) {
    RuntimeException first = failure;
    for (Future<?> f : futures) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted in block-sparse kernel", e);
      } catch (ExecutionException e) {
        if (first == null) {
          first = new IllegalStateException("block-sparse kernel failed", e.getCause());
        }
      }
    }
    return first;
  }
}
