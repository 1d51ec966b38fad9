package org.sparseflow.cli;

import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.sparseflow.train.Comparison;
import org.sparseflow.train.Stoppable;

/**
 * Ctrl-C handling for training: a JVM shutdown hook asks the trainer to stop at the next step
 * boundary and waits (up to 10 minutes) until it has saved its checkpoint. The same {@code
 * Trainer.requestStop()} path is what the integration test uses to simulate an interrupt.
 */
final class Shutdown {

  private static volatile boolean inProgress;

  private Shutdown() {}

  static boolean inProgress() {
    return inProgress;
  }

  static Comparison.Outcome guardComparison(Comparison c) throws Exception {
    return guard(c, c::run);
  }

  /** Installs the hook for the duration of {@code body}. */
  static <T> T guard(Stoppable trainer, Callable<T> body) throws Exception {
    Thread hook =
        new Thread(
            () -> {
              inProgress = true;
              System.err.println();
              System.err.println(
                  "interrupt: finishing the current step and saving a checkpoint...");
              trainer.requestStop();
              try {
                trainer.awaitFinished(10, TimeUnit.MINUTES);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "sparseflow-checkpoint-on-exit");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      return body.call();
    } finally {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running: it waits for us
      }
    }
  }
}
