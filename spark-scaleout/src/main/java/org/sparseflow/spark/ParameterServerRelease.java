package org.sparseflow.spark;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.nd4j.parameterserver.distributed.v2.ModelParameterServer;
import org.nd4j.parameterserver.distributed.v2.transport.Transport;
import org.nd4j.parameterserver.distributed.v2.transport.impl.AeronUdpTransport;
import org.nd4j.parameterserver.distributed.v2.transport.impl.BaseTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shuts down this JVM's gradient-sharing parameter server and frees the threads that dl4j M2 leaves
 * running after {@code AeronUdpTransport.shutdown()}.
 *
 * <p>Every {@code AeronUdpTransport} polls its Aeron subscription in a {@code while (true)} loop
 * that idles 1 µs between polls and never checks for shutdown; {@code shutdown()} closes the
 * subscription and calls {@code ExecutorService.shutdown()}, which interrupts nothing. So each
 * stopped transport keeps a thread spinning on a closed subscription. Measured on a 2-core Xeon (a
 * JVM that started and stopped transports): one live transport used 0.98 s of CPU in 5 s, six
 * stopped ones 3.5 s. Gradient-sharing MST stops one transport per interval in the driver and in
 * every executor, so the JVMs got slower with every interval: on the one-host test cluster the
 * executors waited 6, 7, 8, 13, 15 and 20 s in successive intervals for the mesh to form, and on a
 * loaded CI host a 6-interval job ran past 8 minutes. After the shutdown this class takes the
 * transport's subscription away (its poll thread then ends with a NullPointerException that is
 * logged at debug level) and interrupts the transport's message, sender and heartbeat threads,
 * which end cleanly. The same 2-core JVM then used 0.02 s of CPU in 5 s with six stopped
 * transports. The fields are protected in dl4j M2 with no accessor, hence reflection; on another
 * dl4j version where they differ this logs a warning and leaves the threads as they are.
 */
final class ParameterServerRelease {
  private static final Logger LOG = LoggerFactory.getLogger(ParameterServerRelease.class);
  private static final String AERON_TRANSPORT = AeronUdpTransport.class.getName();

  private ParameterServerRelease() {}

  /** Aeron's switch that deletes an embedded media driver's directory when the driver closes. */
  static final String AERON_DELETE_ON_SHUTDOWN = "aeron.dir.delete.on.shutdown";

  /**
   * Makes the transports this JVM starts from now on delete their Aeron directory when they shut
   * down, unless the user set the switch. Every {@code AeronUdpTransport} launches an embedded
   * media driver in a fresh {@code /dev/shm/aeron-root-<uuid>} directory (17 to 400 MB) and closes
   * it without deleting it, and gradient-sharing MST starts one transport per interval in the
   * driver and in every executor. On the test host a day of test runs filled the 24 GiB {@code
   * /dev/shm}; new transports then failed to connect ("Can't establish connection") and the job
   * hung. Call it before the first transport of a JVM starts.
   */
  static void deleteAeronDirectoriesOnShutdown() {
    if (System.getProperty(AERON_DELETE_ON_SHUTDOWN) == null) {
      System.setProperty(AERON_DELETE_ON_SHUTDOWN, "true");
    }
  }

  /** Stops the parameter server of this JVM, if it runs, and releases its transport's threads. */
  static synchronized void shutdown() {
    ModelParameterServer mps = ModelParameterServer.getInstance();
    Transport transport = mps.getTransport();
    if (mps.isInitialized()) {
      mps.shutdown();
    }
    release(transport);
  }

  /**
   * Releases the threads of a transport that has been shut down; does nothing for a running one,
   * for {@code null} and for transports other than Aeron's.
   */
  static synchronized void release(Transport transport) {
    if (!(transport instanceof AeronUdpTransport)) {
      return;
    }
    try {
      if (!((AtomicBoolean) field(AeronUdpTransport.class, "shutdownFlag").get(transport)).get()) {
        return;
      }
      Field subscription = field(AeronUdpTransport.class, "ownSubscription");
      if (subscription.get(transport) == null) {
        return; // released before
      }
      quietenPollThreads();
      subscription.set(transport, null);
      ((ExecutorService) field(AeronUdpTransport.class, "messagesExecutorService").get(transport))
          .shutdownNow();
      ((ExecutorService) field(BaseTransport.class, "executorService").get(transport))
          .shutdownNow();
      LOG.debug("released the threads of stopped transport {}", transport.id());
    } catch (ReflectiveOperationException | RuntimeException e) {
      LOG.warn(
          "could not release the threads of stopped parameter-server transport {} ({}); each"
              + " stopped transport keeps a polling thread busy (a dl4j M2 leak)",
          transport.id(),
          e.toString());
    }
  }

  /**
   * Gives every Aeron transport thread a handler that logs, at debug level, the
   * NullPointerException with which a released transport's poll loop ends; any other exception is
   * reported as before.
   */
  private static void quietenPollThreads() {
    for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
      if (isTransportThread(e.getValue())) {
        Thread t = e.getKey();
        Thread.UncaughtExceptionHandler previous = t.getUncaughtExceptionHandler();
        t.setUncaughtExceptionHandler(
            (thread, error) -> {
              if (error instanceof NullPointerException) {
                LOG.debug("poll thread {} of a released transport ended", thread.getName());
              } else {
                previous.uncaughtException(thread, error);
              }
            });
      }
    }
  }

  /** A thread that runs one of the transport's loops (poll, message or sender). */
  private static boolean isTransportThread(StackTraceElement[] stack) {
    for (StackTraceElement f : stack) {
      if (f.getClassName().startsWith(AERON_TRANSPORT + "$") && f.getMethodName().equals("run")) {
        return true;
      }
    }
    return false;
  }

  private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
    Field f = owner.getDeclaredField(name);
    f.setAccessible(true);
    return f;
  }
}
