package org.sparseflow.layers.spi;

import java.util.Map;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.layers.Layer;

/**
 * Base of the built-in sparsifiers of DL4J's single-weight feed-forward layers ({@link
 * DenseLayerSparsifier}, {@link OutputLayerSparsifier}): one weight "W" [nIn, nOut].
 */
abstract class FeedForwardSparsifier implements LayerSparsifier {

  @Override
  public Map<String, long[]> weightShapes(Layer layer) {
    FeedForwardLayer f = (FeedForwardLayer) layer;
    return Map.of("W", new long[] {f.getNIn(), f.getNOut()});
  }
}
