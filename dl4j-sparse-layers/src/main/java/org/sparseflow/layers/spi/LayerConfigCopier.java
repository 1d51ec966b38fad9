package org.sparseflow.layers.spi;

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

  static ObjectMapper mapper() {
    return NeuralNetConfiguration.mapper();
  }
}
