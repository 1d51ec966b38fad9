package org.sparseflow.bench;

import java.util.List;
import org.sparseflow.layers.config.DensityDistribution;
import org.sparseflow.layers.config.SparsityConfig;

/** Sparsify settings shared by the suites that make a GPT's block weights sparse. */
public final class UniformSparsity {
  private UniformSparsity() {}

  /**
   * {@code pattern} at {@code sparsity} on the weights whose names match {@code include}, the same
   * density in every layer, first and last layers included.
   */
  public static SparsityConfig of(String pattern, double sparsity, String include) {
    SparsityConfig sc = new SparsityConfig();
    sc.setPattern(pattern);
    sc.setSparsity(sparsity);
    sc.setDistribution(DensityDistribution.UNIFORM);
    sc.setKeepFirstDense(false);
    sc.setKeepLastDense(false);
    sc.setInclude(List.of(include));
    return sc;
  }
}
