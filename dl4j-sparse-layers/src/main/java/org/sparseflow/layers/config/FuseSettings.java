package org.sparseflow.layers.config;

import java.util.Objects;
import org.nd4j.shade.jackson.annotation.JsonPropertyOrder;

/**
 * The {@code fuse} section of a {@link SparsityConfig}: which SameDiff subgraphs {@code
 * Sparsify.apply} replaces with fused SparseFlow ops (Java kernels, forward and backward), so that
 * a sparse step is dominated by its matmuls. A Jackson bean.
 *
 * <pre>
 * fuse: {layerNorm: true, gelu: true, biasAdd: true}
 * </pre>
 *
 * <ul>
 *   <li>{@code layerNorm}: ND4J's {@code layer_norm} over the last axis (gain and bias) becomes
 *       {@code sparseflow_layer_norm};
 *   <li>{@code gelu}: ND4J's {@code gelu} (the sigmoid form {@code z sigmoid(1.702 z)}) becomes
 *       {@code sparseflow_gelu};
 *   <li>{@code biasAdd}: {@code add(sparse_matmul(x, W), b)} with a rank-1 b of W's column count,
 *       where the add is the product's only consumer, becomes one sparse matmul with bias (the bias
 *       gradient is summed inside the matmul's backward pass instead of by {@code add_bp}).
 * </ul>
 *
 * Both default to {@link #DEFAULT_LAYER_NORM} / {@link #DEFAULT_GELU} when the section or a field
 * is absent. DL4J models are not affected (their layer-norm and dense layers already run these
 * kernels).
 */
@JsonPropertyOrder({"layerNorm", "gelu", "biasAdd"})
public class FuseSettings {
  /** Default of {@code fuse.layerNorm} (measured faster: docs/experiments/samediff-step-log.md). */
  public static final boolean DEFAULT_LAYER_NORM = true;

  /** Default of {@code fuse.gelu} (measured: docs/experiments/samediff-step-log.md). */
  public static final boolean DEFAULT_GELU = true;

  /** Default of {@code fuse.biasAdd} (measured: docs/experiments/samediff-step-log.md). */
  public static final boolean DEFAULT_BIAS_ADD = true;

  private boolean layerNorm = DEFAULT_LAYER_NORM;
  private boolean gelu = DEFAULT_GELU;
  private boolean biasAdd = DEFAULT_BIAS_ADD;

  public FuseSettings() {}

  public FuseSettings(boolean layerNorm, boolean gelu, boolean biasAdd) {
    this.layerNorm = layerNorm;
    this.gelu = gelu;
    this.biasAdd = biasAdd;
  }

  /** The settings used when a config has no {@code fuse} section. */
  public static FuseSettings defaults() {
    return new FuseSettings();
  }

  /** Neither subgraph fused: the rewrite touches only matmuls and attention. */
  public static FuseSettings none() {
    return new FuseSettings(false, false, false);
  }

  public boolean isLayerNorm() {
    return layerNorm;
  }

  public void setLayerNorm(boolean layerNorm) {
    this.layerNorm = layerNorm;
  }

  public boolean isGelu() {
    return gelu;
  }

  public void setGelu(boolean gelu) {
    this.gelu = gelu;
  }

  public boolean isBiasAdd() {
    return biasAdd;
  }

  public void setBiasAdd(boolean biasAdd) {
    this.biasAdd = biasAdd;
  }

  /** Whether any fusion is on. */
  public boolean any() {
    return layerNorm || gelu || biasAdd;
  }

  public FuseSettings copy() {
    return new FuseSettings(layerNorm, gelu, biasAdd);
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    return o instanceof FuseSettings f
        && layerNorm == f.layerNorm
        && gelu == f.gelu
        && biasAdd == f.biasAdd;
  }

  @Override
  public int hashCode() {
    return Objects.hash(layerNorm, gelu, biasAdd);
  }

  @Override
  public String toString() {
    return "FuseSettings{layerNorm=" + layerNorm + ", gelu=" + gelu + ", biasAdd=" + biasAdd + "}";
  }
}
