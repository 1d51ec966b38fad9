package org.sparseflow.ops.attention;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.matmul.BlockSparseKernels;

/**
 * Java-thread parallel loop for the attention kernels. Uses as many threads as {@link
 * BlockSparseKernels#THREADS} ({@code -Dsparseflow.threads=N}, default: the core count) and, like
 * the block-sparse matmul kernels, switches BLAS to one thread while a kernel runs, on one thread
 * or several (restored afterwards): the kernels issue many small GEMMs, for which BLAS's own
 * threading costs more than it gains, and the results then do not depend on the thread count.
 */
final class AttentionThreads {

  private static final int THREADS = BlockSparseKernels.THREADS;

  private static final ExecutorService POOL =
      THREADS > 1
          ? Executors.newFixedThreadPool(
              THREADS - 1,
              r -> {
                Thread t = new Thread(r, "sparseflow-attention");
                t.setDaemon(true);
                return t;
              })
          : null;

  /** Serializes kernels so the BLAS thread-count switch is never interleaved. */
  private static final Object LOCK = new Object();

  /** Tests: run every loop in the calling thread (the one-thread schedule) when set. */
  private static volatile boolean serial;

  private AttentionThreads() {}

  /** The kernels' thread count ({@code -Dsparseflow.threads}, default: the cores). */
  static int threads() {
    return THREADS;
  }

  /** Tests: forces the one-thread schedule ({@code true}) or restores the default. */
  static void setSerial(boolean on) {
    serial = on;
  }

  /** Below this many multiply-adds a call runs in the calling thread (hand-off would cost more). */
  static final long SERIAL_WORK = 1L << 20;

  /**
   * Runs {@code body} for 0..n-1; tasks are claimed dynamically (in index order) by the threads.
   * {@code work} is a rough multiply-add count of the whole loop, used only to keep tiny calls
   * serial.
   */
  static void parallelFor(int n, long work, IntConsumer body) {
    if (n <= 0) {
      return;
    }
    if (THREADS == 1 || serial || n == 1 || work < SERIAL_WORK) {
      // BLAS at one thread here too: OpenBLAS's threaded sgemm does not always give the bits of its
      // one-thread sgemm (measured with its Haswell kernels on an AMD EPYC), and the result must
      // not depend on the thread count
      exclusive(
          () -> {
            for (int i = 0; i < n; i++) {
              body.accept(i);
            }
          });
      return;
    }
    exclusive(() -> runParallel(n, body));
  }

  /**
   * Runs {@code body} holding the kernel lock with BLAS set to one thread (restored afterwards).
   * Re-entrant: a kernel with several parallel phases wraps them all so that BLAS threads are
   * switched once.
   */
  static void exclusive(Runnable body) {
    if (Thread.holdsLock(LOCK)) {
      body.run();
      return;
    }
    synchronized (LOCK) {
      Blas blas = Nd4j.factory().blas();
      int previous = blas.getMaxThreads();
      boolean switchThreads = previous != 1;
      if (switchThreads) {
        blas.setMaxThreads(1);
      }
      try {
        body.run();
      } finally {
        if (switchThreads) {
          blas.setMaxThreads(previous);
        }
      }
    }
  }

  private static void runParallel(int n, IntConsumer body) {
    {
      {
        AtomicInteger next = new AtomicInteger();
        Runnable worker =
            () -> {
              for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
                body.accept(i);
              }
            };
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 1; t < Math.min(THREADS, n); t++) {
          futures.add(POOL.submit(worker));
        }
        Throwable failure = null;
        try {
          worker.run();
        } catch (RuntimeException | Error e) {
          failure = e;
          next.set(n); // stop the others early
        }
        for (Future<?> f : futures) {
          try {
            f.get();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted in sparse attention kernel", e);
          } catch (ExecutionException e) {
            if (failure == null) {
              failure = e.getCause();
            }
          }
        }
        if (failure instanceof RuntimeException) {
          throw (RuntimeException) failure;
        }
        if (failure instanceof Error) {
          throw (Error) failure;
        }
        if (failure != null) {
          throw new IllegalStateException("sparse attention kernel failed", failure);
        }
      }
    }
  }
}
