package org.sparseflow.dataflow.backend;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Global store of recorded ops, grouped by iteration. Iterations advance through {@link
 * #nextIteration()} (called by {@link DataflowTrainingListener} / {@link DataflowSameDiffListener}
 * or by user code). Only the last {@code sparseflow.dataflow.keepIterations} (default 4) iterations
 * are kept.
 */
public final class OpRecorder {
  private static final OpRecorder GLOBAL =
      new OpRecorder(Integer.getInteger("sparseflow.dataflow.keepIterations", 4));

  private final int keep;
  private final AtomicInteger iteration = new AtomicInteger();
  private final AtomicLong sequence = new AtomicLong();
  private final Map<Integer, List<RecordedOp>> byIteration = new LinkedHashMap<>();
  private volatile boolean enabled = true;

  public OpRecorder(int keepIterations) {
    if (keepIterations < 1) {
      throw new IllegalArgumentException("keepIterations must be >= 1, got " + keepIterations);
    }
    this.keep = keepIterations;
  }

  public static OpRecorder global() {
    return GLOBAL;
  }

  public int currentIteration() {
    return iteration.get();
  }

  public void setEnabled(boolean on) {
    enabled = on;
  }

  public boolean isEnabled() {
    return enabled;
  }

  /**
   * Ends the current iteration; following ops belong to the next one. Returns the new iteration
   * index.
   */
  public int nextIteration() {
    return iteration.incrementAndGet();
  }

  long nextSequence() {
    return sequence.getAndIncrement();
  }

  public synchronized void add(RecordedOp op) {
    if (!enabled) {
      return;
    }
    byIteration.computeIfAbsent(op.iteration(), k -> new ArrayList<>()).add(op);
    while (byIteration.size() > keep) {
      Integer first = byIteration.keySet().iterator().next();
      byIteration.remove(first);
    }
  }

  public synchronized List<RecordedOp> iteration(int index) {
    List<RecordedOp> l = byIteration.get(index);
    return l == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(l));
  }

  /** Iteration indices currently held, oldest first. */
  public synchronized List<Integer> iterations() {
    return new ArrayList<>(byIteration.keySet());
  }

  public synchronized long totalRecorded() {
    long n = 0;
    for (List<RecordedOp> l : byIteration.values()) {
      n += l.size();
    }
    return n;
  }

  public synchronized void clear() {
    byIteration.clear();
  }
}
