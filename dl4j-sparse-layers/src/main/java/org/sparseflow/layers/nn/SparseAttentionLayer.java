package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.api.Layer;

/**
 * A layer implementation whose attention sparsity pattern can be switched during training (MST's
 * hybrid attention). Used by {@code org.sparseflow.layers.api.SparseParams#attentionLayers}.
 */
public interface SparseAttentionLayer extends Layer {

  /** The current attention pattern string ({@code AttentionPattern} form, e.g. "local:4"). */
  String attentionPattern();

  /**
   * Switches to another attention pattern: validates it, stores it in the layer configuration and
   * drops every layout cached for the old one, so the next forward pass uses the new pattern.
   *
   * @throws IllegalArgumentException naming the pattern when it does not parse
   */
  void setAttentionPattern(String pattern);
}
