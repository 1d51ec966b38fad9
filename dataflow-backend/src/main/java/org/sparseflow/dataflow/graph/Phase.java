package org.sparseflow.dataflow.graph;

/** Part of the training step an op belongs to. */
public enum Phase {
  FORWARD,
  BACKWARD,
  OPTIMIZER,
  UNKNOWN
}
