package org.sparseflow.layers.nn;

/**
 * The masked-weight setters of the {@link SparseDenseLayer} and {@link SparseOutputLayer} builders.
 *
 * @param <B> the builder, returned by every setter
 */
interface MaskedWeightBuilder<B extends MaskedWeightBuilder<B>> {

  /** The options this builder has collected so far. */
  MaskedWeightOptions maskedWeightOptions();

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /** Weight pattern: unstructured, block8|16|32|64, or n:m. */
  default B pattern(String pattern) {
    maskedWeightOptions().pattern = pattern;
    return self();
  }

  /** Fraction of weights kept by the initial mask, in (0, 1]. */
  default B density(double density) {
    maskedWeightOptions().density = density;
    return self();
  }

  /**
   * Weight storage: {@code masked} (default: dense W plus a mask param) or {@code packed} (block
   * patterns: only the kept blocks are params; fixed layout, no MST).
   */
  default B storage(String storage) {
    maskedWeightOptions().storage = storage;
    return self();
  }

  /**
   * Packed storage: the kept blocks as row-major block indices {@code i * (nOut / b) + j}; when not
   * given, a seeded random layout of the configured density ({@link #layoutSeed}).
   */
  default B blockLayout(int[] blockLayout) {
    maskedWeightOptions().blockLayout = blockLayout == null ? null : blockLayout.clone();
    return self();
  }

  /** Seed of the random block layout of packed storage when none is given (default 12345). */
  default B layoutSeed(long layoutSeed) {
    maskedWeightOptions().layoutSeed = layoutSeed;
    return self();
  }
}
