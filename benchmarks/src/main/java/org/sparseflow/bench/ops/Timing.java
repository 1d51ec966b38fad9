package org.sparseflow.bench.ops;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.memory.conf.WorkspaceConfiguration;
import org.nd4j.linalg.api.memory.enums.AllocationPolicy;
import org.nd4j.linalg.api.memory.enums.LearningPolicy;
import org.nd4j.linalg.factory.Nd4j;

/**
 * How the ops suite times a call. With {@code workspace}, each timed call runs inside an ND4J
 * workspace of its own (one per task), so its outputs reuse the same memory from one repetition to
 * the next, as DL4J layers' activations and gradients do in training; without it every output is
 * fresh native memory, and on this kind of host first-touch page faults on the 8-32 MB outputs cost
 * as much as the sparse kernel itself (docs/experiments/kernels.md). {@code settleMs} is a pause
 * before the last task of each round (the sparse one): OpenBLAS's worker thread spins in {@code
 * sched_yield} for about 100 ms after each threaded GEMM of the dense tasks, and on 2 cores it
 * would otherwise compete with the sparse kernel's threads. The calling thread busy-waits through
 * the pause, so the sparse task starts on a running core as the dense tasks do.
 */
final class Timing {

  private static final WorkspaceConfiguration WS =
      WorkspaceConfiguration.builder()
          .policyAllocation(AllocationPolicy.STRICT)
          .policyLearning(LearningPolicy.FIRST_LOOP)
          .build();

  private final boolean workspace;
  private final int settleMs;
  private final int leadCalls;

  Timing(boolean workspace, int settleMs, int leadCalls) {
    this.workspace = workspace;
    this.settleMs = settleMs;
    this.leadCalls = leadCalls;
  }

  /** Runs task (in its workspace when enabled). */
  private void call(int id, Runnable task) {
    if (!workspace) {
      task.run();
      return;
    }
    MemoryWorkspace ws = Nd4j.getWorkspaceManager().getAndActivateWorkspace(WS, "ops-bench-" + id);
    try {
      task.run();
    } finally {
      ws.close();
    }
  }

  private void settle() {
    if (settleMs <= 0) {
      return;
    }
    // spin rather than sleep: on the 2-vCPU VMs this project runs on, a thread that slept 150 ms
    // ran the next ~10 ms of kernel work 30-60 % slower (sparse forward 14-17 ms after a sleep,
    // 10.9 ms after a spin, 10.3 ms back to back; docs/experiments/kernels.md section 10), while
    // the dense tasks run straight after the previous task. Training calls kernels back to back.
    long end = System.nanoTime() + settleMs * 1_000_000L;
    while (System.nanoTime() < end) {
      Thread.onSpinWait();
    }
  }

  /**
   * Times each task once per repetition, in turn, after warm-up rounds; the first {@code
   * denseTasks} tasks are the dense ones, every later one is sparse and gets the settle pause
   * before it (a sparse task that ran right after a threaded dense GEMM measured about twice its
   * time: OpenBLAS's spinning worker takes one of the two cores). Each timed call follows {@code
   * leadCalls} untimed calls of the same task, so every task, dense or sparse, is timed in the
   * steady state of back-to-back calls that training runs in (and that the PyTorch peer is timed
   * in), not as the first call after another task or a pause. Returns per-task samples in ms.
   */
  double[][] alternating(int warmup, int reps, int denseTasks, Runnable... tasks) {
    for (int i = 0; i < warmup; i++) {
      for (int k = 0; k < tasks.length; k++) {
        call(k, tasks[k]);
      }
    }
    double[][] samples = new double[tasks.length][reps];
    for (int r = 0; r < reps; r++) {
      for (int k = 0; k < tasks.length; k++) {
        if (k >= denseTasks) {
          settle();
        }
        for (int lead = 0; lead < leadCalls; lead++) {
          call(k, tasks[k]);
        }
        long t0 = System.nanoTime();
        call(k, tasks[k]);
        samples[k][r] = (System.nanoTime() - t0) / 1e6;
      }
    }
    release();
    return samples;
  }

  /** Minimum CPU time of the calling thread over reps runs, after one warm-up run, in ms. */
  double cpuMin(int reps, Runnable task) {
    ThreadMXBean tm = ManagementFactory.getThreadMXBean();
    int id = 0;
    call(id, task); // warm-up (and the workspace's first, learning loop)
    double best = Double.MAX_VALUE;
    for (int r = 0; r < reps; r++) {
      long t0 = tm.getCurrentThreadCpuTime();
      call(id, task);
      best = Math.min(best, (tm.getCurrentThreadCpuTime() - t0) / 1e6);
    }
    release();
    return best;
  }

  /** Frees this thread's workspaces (each case learns its own sizes). */
  private void release() {
    if (workspace) {
      Nd4j.getWorkspaceManager().destroyAllWorkspacesForCurrentThread();
    }
  }
}
