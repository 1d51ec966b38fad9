package org.sparseflow.layers.spi;

import com.google.auto.service.AutoService;
import java.util.LinkedHashMap;
import java.util.Map;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.nn.SparseOutputLayer;

/**
 * Built-in: the plugin's own layers ({@link SparseDenseLayer}, {@link SparseOutputLayer}, {@link
 * CausalSelfAttentionLayer}) re-configured with the pattern/density/attention pattern of the
 * config, and turned back into stock DL4J layers by {@link #densify}.
 */
@AutoService(LayerSparsifier.class)
public class PluginLayerSparsifier implements LayerSparsifier {

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    return layer instanceof SparseDenseLayer
        || layer instanceof SparseOutputLayer
        || layer instanceof CausalSelfAttentionLayer;
  }

  @Override
  public Map<String, long[]> weightShapes(Layer layer) {
    if (layer instanceof SparseDenseLayer d) {
      return Map.of("W", new long[] {d.getNIn(), d.getNOut()});
    }
    if (layer instanceof SparseOutputLayer o) {
      return Map.of("W", new long[] {o.getNIn(), o.getNOut()});
    }
    CausalSelfAttentionLayer a = (CausalSelfAttentionLayer) layer;
    return attentionWeightShapes(a.getNIn(), a.getNOut());
  }

  /**
   * The projection weights of a {@link CausalSelfAttentionLayer} with {@code nIn} inputs and {@code
   * nOut} outputs: "Wq", "Wk", "Wv" [nIn, nOut] and "Wo" [nOut, nOut], in that order.
   */
  static Map<String, long[]> attentionWeightShapes(long nIn, long nOut) {
    Map<String, long[]> m = new LinkedHashMap<>();
    m.put("Wq", new long[] {nIn, nOut});
    m.put("Wk", new long[] {nIn, nOut});
    m.put("Wv", new long[] {nIn, nOut});
    m.put("Wo", new long[] {nOut, nOut});
    return m;
  }

  @Override
  public boolean hasAttention(Layer layer) {
    return layer instanceof CausalSelfAttentionLayer;
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    Layer copy = layer.clone();
    if (copy instanceof SparseDenseLayer d) {
      if (target.sparseWeights()) {
        d.setPattern(target.pattern());
        d.setDensity(target.density());
      }
    } else if (copy instanceof SparseOutputLayer o) {
      if (target.sparseWeights()) {
        o.setPattern(target.pattern());
        o.setDensity(target.density());
      }
    } else {
      CausalSelfAttentionLayer a = (CausalSelfAttentionLayer) copy;
      if (target.sparseWeights()) {
        a.setProjectionPattern(target.pattern());
        a.setProjectionDensity(target.density());
      }
      if (target.attentionPattern() != null) {
        a.setAttentionPattern(target.attentionPattern());
        a.setBlockSize(target.attentionBlockSize());
      }
    }
    return copy;
  }

  @Override
  public Layer densify(Layer sparseLayer) {
    if (sparseLayer instanceof SparseDenseLayer d) {
      return LayerConfigCopier.convert(
          d,
          DenseLayer.class,
          n -> {
            LayerConfigCopier.removeMaskedWeightFields(n);
            n.put("hasBias", d.hasBias());
            n.put("hasLayerNorm", false);
          });
    }
    if (sparseLayer instanceof SparseOutputLayer o) {
      return LayerConfigCopier.convert(
          o, OutputLayer.class, LayerConfigCopier::removeMaskedWeightFields);
    }
    if (sparseLayer instanceof CausalSelfAttentionLayer a) {
      // no stock DL4J layer is causal: keep the plugin layer, drop the projection masks
      CausalSelfAttentionLayer c = (CausalSelfAttentionLayer) a.clone();
      c.setProjectionPattern(null);
      c.setProjectionDensity(1.0);
      return c;
    }
    return null;
  }
}
