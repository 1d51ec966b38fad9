package org.sparseflow.train;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The "has finished" signal of a {@link Stoppable} job: {@link #run} runs the job's body once and
 * opens the latch when it returns or throws; {@link #await} is what {@code awaitFinished} waits on.
 */
final class FinishLatch {
  private final CountDownLatch finished = new CountDownLatch(1);

  /** A job body that may fail with an I/O error. */
  interface Body<R> {
    R run() throws IOException;
  }

  /** Runs {@code body}, then marks the job finished (also when it throws). */
  <R> R run(Body<R> body) throws IOException {
    try {
      return body.run();
    } finally {
      finished.countDown();
    }
  }

  /** Waits until the job has finished; true if it did within the timeout. */
  boolean await(long timeout, TimeUnit unit) throws InterruptedException {
    return finished.await(timeout, unit);
  }
}
