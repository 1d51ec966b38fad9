package org.sparseflow.layers.spi;

import java.util.Map;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.sparseflow.layers.config.SparsityConfig;

/**
 * Service interface that turns one standard DL4J layer configuration into its sparse counterpart.
 *
 * <p>Implementations are found with {@link java.util.ServiceLoader} (file {@code
 * META-INF/services/org.sparseflow.layers.spi.LayerSparsifier}, or
 * {@code @AutoService(LayerSparsifier.class)}), so a third party adds support for its own layer by
 * putting a jar on the classpath. When several sparsifiers support a layer, the one with the
 * highest {@link #priority()} wins (built-ins use 0).
 *
 * <p>{@code Sparsify} decides, from the {@link SparsityConfig}, which layers get sparse weights and
 * at which density (regexes, first/last layer, ER/ERK allocation over {@link #weightShapes}); the
 * sparsifier only builds the replacement configuration for the {@link LayerSparsity} it is given.
 */
public interface LayerSparsifier {

  /** Short name used in reports. */
  default String name() {
    return getClass().getSimpleName();
  }

  /** Higher wins when several sparsifiers support the same layer. Built-ins return 0. */
  default int priority() {
    return 0;
  }

  /** True if this sparsifier handles {@code layer} under {@code config}. */
  boolean supports(Layer layer, SparsityConfig config);

  /**
   * Weights the sparse replacement will mask, keyed by the parameter key of the <em>original</em>
   * layer (e.g. {"W": [nIn, nOut]}), used for the per-layer density allocation. Empty if the layer
   * has no maskable weight (then only its attention pattern can change).
   */
  Map<String, long[]> weightShapes(Layer layer);

  /** True if the layer has an attention pattern that {@code AttentionSettings} may set. */
  default boolean hasAttention(Layer layer) {
    return false;
  }

  /**
   * True if the layer must be replaced even when nothing in it becomes sparse (e.g. DL4J's
   * bidirectional SelfAttentionLayer when the config asks for causal attention).
   */
  default boolean replaceEvenIfDense(Layer layer, SparsityConfig config) {
    return false;
  }

  /** Builds the replacement configuration. Must not modify {@code layer}. */
  Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config);

  /**
   * Parameter key in the replacement -> parameter key in the original, for copying trained
   * parameters of an initialised network. Keys absent from the map are copied by equal name when
   * the shapes agree.
   */
  default Map<String, String> paramMapping(Layer original, Layer replacement) {
    return Map.of();
  }

  /**
   * A stock DL4J configuration equivalent to {@code sparseLayer} with its masks folded into the
   * weights (used by {@code Sparsify.densify}), or null if this sparsifier cannot densify it.
   */
  default Layer densify(Layer sparseLayer) {
    return null;
  }
}
