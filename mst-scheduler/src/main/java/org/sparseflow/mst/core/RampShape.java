package org.sparseflow.mst.core;

/** Shape of a sparsity ramp between two levels. */
public enum RampShape {
  /** Straight line. */
  LINEAR,
  /**
   * Zhu &amp; Gupta 2017 (arXiv 1710.01878): s_t = s_end + (s_start - s_end)(1 - p)^3; fast change
   * early.
   */
  CUBIC,
  /**
   * Piecewise constant in {@code stepLevels} equal increments, like the authors' per-1k-iteration
   * keys.
   */
  STEP
}
