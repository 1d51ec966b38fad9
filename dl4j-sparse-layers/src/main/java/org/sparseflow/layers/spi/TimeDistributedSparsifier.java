package org.sparseflow.layers.spi;

import com.google.auto.service.AutoService;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.sparseflow.layers.config.SparsityConfig;

/**
 * Built-in: DL4J's {@link TimeDistributed} wrapper (a feed-forward layer applied at every time step
 * of a recurrent [B, C, T] activation, the usual way to put an MLP into a DL4J GPT) around a layer
 * another sparsifier handles: the inner layer is sparsified and re-wrapped.
 */
@AutoService(LayerSparsifier.class)
public class TimeDistributedSparsifier implements LayerSparsifier {

  private static LayerSparsifier inner(Layer layer, SparsityConfig cfg) {
    if (!(layer instanceof TimeDistributed td)) {
      return null;
    }
    List<LayerSparsifier> all = LayerSparsifiers.all();
    all.removeIf(s -> s instanceof TimeDistributedSparsifier);
    return LayerSparsifiers.find(all, td.getUnderlying(), cfg);
  }

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    return inner(layer, config) != null;
  }

  @Override
  public Map<String, long[]> weightShapes(Layer layer) {
    TimeDistributed td = (TimeDistributed) layer;
    LayerSparsifier s = inner(layer, null);
    return s == null ? Map.of() : s.weightShapes(td.getUnderlying());
  }

  @Override
  public boolean hasAttention(Layer layer) {
    LayerSparsifier s = inner(layer, null);
    return s != null && s.hasAttention(((TimeDistributed) layer).getUnderlying());
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    TimeDistributed td = (TimeDistributed) layer;
    Layer in = inner(layer, config).sparsify(td.getUnderlying(), target, config);
    TimeDistributed out = new TimeDistributed(in, td.getRnnDataFormat());
    out.setLayerName(td.getLayerName());
    return out;
  }

  @Override
  public Layer densify(Layer sparseLayer) {
    if (!(sparseLayer instanceof TimeDistributed td)) {
      return null;
    }
    for (LayerSparsifier s : LayerSparsifiers.all()) {
      if (s instanceof TimeDistributedSparsifier) {
        continue;
      }
      Layer d = s.densify(td.getUnderlying());
      if (d != null) {
        TimeDistributed out = new TimeDistributed(d, td.getRnnDataFormat());
        out.setLayerName(td.getLayerName());
        return out;
      }
    }
    return null;
  }
}
