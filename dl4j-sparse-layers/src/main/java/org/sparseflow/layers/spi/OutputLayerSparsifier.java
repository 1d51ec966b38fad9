package org.sparseflow.layers.spi;

import com.google.auto.service.AutoService;
import java.util.Map;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseOutputLayer;

/**
 * Built-in: DL4J {@link OutputLayer} -> {@link SparseOutputLayer} (loss, activation, updater carry
 * over).
 */
@AutoService(LayerSparsifier.class)
public class OutputLayerSparsifier extends FeedForwardSparsifier {

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    return layer != null && layer.getClass() == OutputLayer.class;
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    Map<String, Object> set = LayerConfigCopier.maskedWeightFields(target);
    return LayerConfigCopier.convert(layer, SparseOutputLayer.class, set);
  }
}
