package org.sparseflow.layers.config;

/** How the first mask of a sparse weight is chosen. */
public enum InitialMask {
  /**
   * Uniformly random kept positions at the target density (MST / RigL default), seeded by the
   * config seed.
   */
  RANDOM,
  /** Keep the largest-magnitude weights (useful when sparsifying a trained network). */
  MAGNITUDE
}
