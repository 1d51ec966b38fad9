package org.sparseflow.layers.spi;

import java.util.Map;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseDenseLayer;

/**
 * A sparsifier registered only through src/test/resources/META-INF/services (no @AutoService),
 * standing for a jar a third party drops on the classpath.
 */
public class ThirdPartySparsifier implements LayerSparsifier {
  static volatile int calls;

  @Override
  public String name() {
    return "third-party";
  }

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    return layer instanceof ScaledDenseLayer;
  }

  @Override
  public Map<String, long[]> weightShapes(Layer layer) {
    ScaledDenseLayer d = (ScaledDenseLayer) layer;
    return Map.of("W", new long[] {d.getNIn(), d.getNOut()});
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    calls++;
    return LayerConfigCopier.convert(
        layer,
        SparseDenseLayer.class,
        Map.of("pattern", target.pattern(), "density", target.density()));
  }
}
