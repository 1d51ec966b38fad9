package org.sparseflow.layers.spi;

/**
 * What {@code Sparsify} asks a {@link LayerSparsifier} to build for one layer.
 *
 * @param sparseWeights true if the layer's weights get masks
 * @param pattern weight pattern (PatternSpec string), meaningful when {@code sparseWeights}
 * @param density fraction of weights kept, in (0, 1], meaningful when {@code sparseWeights}
 * @param attentionPattern attention pattern to set (AttentionPattern string), or null to keep the
 *     layer's own / dense
 * @param attentionBlockSize block size of the sparse attention layout
 */
public record LayerSparsity(
    boolean sparseWeights,
    String pattern,
    double density,
    String attentionPattern,
    int attentionBlockSize) {

  public static LayerSparsity dense() {
    return new LayerSparsity(false, null, 1.0, null, 16);
  }
}
