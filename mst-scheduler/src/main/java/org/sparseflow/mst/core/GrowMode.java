package org.sparseflow.mst.core;

/** How inactive connections are chosen for regrowth at a topology update. */
public enum GrowMode {
  /** Largest |dense gradient| (RigL, Evci et al. 2020). */
  GRADIENT,
  /** Uniformly at random (SET, Mocanu et al. 2018). */
  RANDOM,
  /** "Mixed-Growing": r/(r+1) by gradient, the rest at random (MST code, grad_rand_ratio r = 3). */
  MIXED,
  /**
   * No regrowth (gradual magnitude pruning). Only valid when sparsity never decreases and the drop
   * fraction is 0.
   */
  NONE
}
