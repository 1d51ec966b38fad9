package org.sparseflow.train;

import java.util.concurrent.TimeUnit;

/** A long job that can be asked to stop cleanly (saving its checkpoint) from another thread. */
public interface Stoppable {

  void requestStop();

  /** Waits until the job has returned; true if it did within the timeout. */
  boolean awaitFinished(long timeout, TimeUnit unit) throws InterruptedException;
}
