package org.sparseflow.layers.spi;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * Converts one DL4J layer configuration into another class by way of its JSON tree: every common
 * field (nIn, nOut, activation, weight init, updater, regularization, constraints, layer name, ...)
 * carries over, fields the target does not know are ignored (DL4J's mapper does not fail on them).
 * The target class is chosen by the calling sparsifier, never read from user input.
 */
public final class LayerConfigCopier {
  private LayerConfigCopier() {}

  public static <T extends Layer> T convert(
      Layer source, Class<T> target, Map<String, Object> set) {
    return convert(
        source, target, node -> set.forEach((k, v) -> node.set(k, mapper().valueToTree(v))));
  }

  public static <T extends Layer> T convert(
      Layer source, Class<T> target, Consumer<ObjectNode> edit) {
    ObjectMapper m = mapper();
    ObjectNode node = m.valueToTree(source);
    node.put("@class", target.getName());
    edit.accept(node);
    try {
      Layer out = m.treeToValue(node, Layer.class);
      return target.cast(out);
    } catch (Exception e) {
      throw new IllegalStateException(
          "Cannot convert layer "
              + source.getLayerName()
              + " ("
              + source.getClass().getSimpleName()
              + ") into "
              + target.getSimpleName()
              + ": "
              + e.getMessage(),
          e);
    }
  }

  /**
   * The JSON fields of a masked (or packed) weight layer for {@code target}: pattern and density,
   * and with packed storage the storage and the layout of weight "W". A new mutable map, so a
   * sparsifier can add its layer's own fields.
   */
  static Map<String, Object> maskedWeightFields(LayerSparsity target) {
    Map<String, Object> set = new LinkedHashMap<>();
    set.put("pattern", target.pattern());
    set.put("density", target.density());
    if (target.packed()) {
      set.put("storage", "packed");
      set.put("blockLayout", target.layouts().get("W"));
    }
    return set;
  }

  /** Drops the masked-weight fields (pattern, density) from a layer's JSON. */
  static void removeMaskedWeightFields(ObjectNode fields) {
    fields.remove("pattern");
    fields.remove("density");
  }

  static ObjectMapper mapper() {
    return NeuralNetConfiguration.mapper();
  }
}
