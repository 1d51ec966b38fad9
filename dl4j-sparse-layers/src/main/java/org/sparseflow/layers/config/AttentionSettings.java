package org.sparseflow.layers.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Attention part of a {@link SparsityConfig}: which attention pattern sparse attention layers use
 * and whether DL4J's (bidirectional) {@code SelfAttentionLayer} is replaced by the plugin's causal
 * layer. A Jackson bean: public no-arg constructor and getters/setters.
 */
public class AttentionSettings {
  /**
   * Attention pattern string ({@code AttentionPattern.parse} syntax), e.g. "local:64+strided:64";
   * null = dense causal.
   */
  private String pattern;

  /** Block size of the block-sparse attention layout. */
  private int blockSize = 16;

  /**
   * Regexes over layer names / SameDiff variable names selecting the attention layers the pattern
   * applies to.
   */
  private List<String> layers = new ArrayList<>(List.of(".*"));

  /** Replace DL4J's SelfAttentionLayer (bidirectional) by the causal CausalSelfAttentionLayer. */
  private boolean replaceSelfAttention = false;

  public AttentionSettings() {}

  public AttentionSettings(
      String pattern, int blockSize, List<String> layers, boolean replaceSelfAttention) {
    this.pattern = pattern;
    this.blockSize = blockSize;
    this.layers = layers == null ? null : new ArrayList<>(layers);
    this.replaceSelfAttention = replaceSelfAttention;
  }

  public String getPattern() {
    return pattern;
  }

  public void setPattern(String pattern) {
    this.pattern = pattern;
  }

  public int getBlockSize() {
    return blockSize;
  }

  public void setBlockSize(int blockSize) {
    this.blockSize = blockSize;
  }

  public List<String> getLayers() {
    return layers;
  }

  public void setLayers(List<String> layers) {
    this.layers = layers;
  }

  public boolean isReplaceSelfAttention() {
    return replaceSelfAttention;
  }

  public void setReplaceSelfAttention(boolean replaceSelfAttention) {
    this.replaceSelfAttention = replaceSelfAttention;
  }

  /** True when a sparse attention pattern is set (other than plain "dense"). */
  public boolean sparseAttentionRequested() {
    return pattern != null && !pattern.isBlank() && !pattern.trim().equalsIgnoreCase("dense");
  }

  public AttentionSettings copy() {
    return new AttentionSettings(pattern, blockSize, layers, replaceSelfAttention);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof AttentionSettings a)) {
      return false;
    }
    return blockSize == a.blockSize
        && replaceSelfAttention == a.replaceSelfAttention
        && Objects.equals(pattern, a.pattern)
        && Objects.equals(layers, a.layers);
  }

  @Override
  public int hashCode() {
    return Objects.hash(pattern, blockSize, layers, replaceSelfAttention);
  }

  @Override
  public String toString() {
    return "AttentionSettings{pattern="
        + pattern
        + ", blockSize="
        + blockSize
        + ", layers="
        + layers
        + ", replaceSelfAttention="
        + replaceSelfAttention
        + "}";
  }
}
