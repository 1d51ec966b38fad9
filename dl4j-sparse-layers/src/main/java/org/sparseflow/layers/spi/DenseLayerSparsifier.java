package org.sparseflow.layers.spi;

import com.google.auto.service.AutoService;
import java.util.Map;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;

/**
 * Built-in: DL4J {@link DenseLayer} (without its optional layer norm) -> {@link SparseDenseLayer}.
 */
@AutoService(LayerSparsifier.class)
public class DenseLayerSparsifier extends FeedForwardSparsifier {

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    return layer != null
        && layer.getClass() == DenseLayer.class
        && !((DenseLayer) layer).hasLayerNorm();
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    Map<String, Object> set = LayerConfigCopier.maskedWeightFields(target);
    set.put("hasBias", ((DenseLayer) layer).hasBias());
    return LayerConfigCopier.convert(layer, SparseDenseLayer.class, set);
  }
}
