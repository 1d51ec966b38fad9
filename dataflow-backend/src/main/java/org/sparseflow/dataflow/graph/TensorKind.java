package org.sparseflow.dataflow.graph;

/**
 * Role of a tensor in a training step; decides residency on chip and what the optimizer touches.
 */
public enum TensorKind {
  /** Model input (token ids, labels). */
  INPUT,
  /** Intermediate activation or activation gradient. */
  ACTIVATION,
  /** Trainable parameter. */
  WEIGHT,
  /** Gradient of a trainable parameter. */
  WEIGHT_GRAD,
  /** Optimizer state (master weights, Adam moments). */
  OPTIMIZER_STATE
}
