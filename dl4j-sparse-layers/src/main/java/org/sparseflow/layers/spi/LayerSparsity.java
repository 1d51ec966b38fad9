package org.sparseflow.layers.spi;

import java.util.Map;

/**
 * What {@code Sparsify} asks a {@link LayerSparsifier} to build for one layer.
 *
 * @param sparseWeights true if the layer's weights get masks
 * @param pattern weight pattern (PatternSpec string), meaningful when {@code sparseWeights}
 * @param density fraction of weights kept, in (0, 1], meaningful when {@code sparseWeights}
 * @param attentionPattern attention pattern to set (AttentionPattern string), or null to keep the
 *     layer's own / dense
 * @param attentionBlockSize block size of the sparse attention layout
 * @param storage {@code masked} (dense W plus a mask) or {@code packed} (kept blocks only)
 * @param layouts with packed storage: the kept blocks (row-major block indices) of each weight,
 *     keyed like {@link LayerSparsifier#weightShapes}; empty otherwise
 */
public record LayerSparsity(
    boolean sparseWeights,
    String pattern,
    double density,
    String attentionPattern,
    int attentionBlockSize,
    String storage,
    Map<String, int[]> layouts) {

  /** Masked storage (the form of releases before packed storage). */
  public LayerSparsity(
      boolean sparseWeights,
      String pattern,
      double density,
      String attentionPattern,
      int attentionBlockSize) {
    this(sparseWeights, pattern, density, attentionPattern, attentionBlockSize, "masked", Map.of());
  }

  public static LayerSparsity dense() {
    return new LayerSparsity(false, null, 1.0, null, 16);
  }

  /** True when the weights are to be stored packed (then {@link #layouts} has each weight). */
  public boolean packed() {
    return sparseWeights && "packed".equals(storage);
  }
}
