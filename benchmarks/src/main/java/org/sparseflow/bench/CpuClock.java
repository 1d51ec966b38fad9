package org.sparseflow.bench;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * CPU-time clocks of the suites: the process's (all threads: the work done, which moves much less
 * than wall time when other processes compete for the cores) and the calling thread's (the step's
 * own work, without GC / JIT threads or waits).
 */
public final class CpuClock {
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  private CpuClock() {}

  /** CPU time of this process, all threads, in ns (0 where the JVM cannot tell). */
  public static long processNanos() {
    return ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
        ? os.getProcessCpuTime()
        : 0L;
  }

  /** CPU time of the calling thread in ns. */
  public static long threadNanos() {
    return THREADS.getCurrentThreadCpuTime();
  }
}
