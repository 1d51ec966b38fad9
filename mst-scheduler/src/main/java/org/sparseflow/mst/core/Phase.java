package org.sparseflow.mst.core;

/**
 * The three phases of Mixed Sparsity Training (arXiv 2408.11746): warm-up, ultra-sparsification,
 * restoration.
 */
public enum Phase {
  /** Sparsity ramps from the initial to the ultra level. */
  WARMUP,
  /** Sparsity is held at the ultra level. */
  ULTRA,
  /** Sparsity is lowered to the final level; connections come back, regrown at zero. */
  RESTORATION
}
