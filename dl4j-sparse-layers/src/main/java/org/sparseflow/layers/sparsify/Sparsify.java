package org.sparseflow.layers.sparsify;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiFunction;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.layers.wrapper.BaseWrapperLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.samediff.SameDiffSparsifier;
import org.sparseflow.layers.spi.LayerSparsifier;
import org.sparseflow.layers.spi.LayerSparsifiers;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * The configuration switch: makes a DL4J or SameDiff model sparse according to a {@link
 * SparsityConfig}.
 *
 * <ul>
 *   <li>{@code apply(config, MultiLayerConfiguration / ComputationGraphConfiguration)}: layer
 *       configurations are replaced through the {@link LayerSparsifier} SPI; masks are drawn
 *       (seeded random) when the network is initialised.
 *   <li>{@code apply(config, MultiLayerNetwork / ComputationGraph)} (initialised): a new network
 *       with the sparse configuration; trained parameters are copied, masks are computed from the
 *       weights ({@code MAGNITUDE}) or drawn with the config seed ({@code RANDOM}); the updater
 *       state starts fresh.
 *   <li>{@code apply(config, SameDiff)}: the graph is rewritten in place (see {@link
 *       SameDiffSparsifier}).
 * </ul>
 *
 * The {@code apply(model)} forms find the config with {@link SparsityConfig#resolve()}; without one
 * (or with a null config) the model is returned unchanged. {@code densify} turns a sparse model
 * back into stock layers.
 */
public final class Sparsify {
  private static final Logger log = LoggerFactory.getLogger(Sparsify.class);

  private Sparsify() {}

  // ------------------------------------------------------------------ resolution of the config
  private static <T> Sparsified<T> resolved(
      T model, BiFunction<SparsityConfig, T, Sparsified<T>> f) {
    Optional<SparsityConfig> c = SparsityConfig.resolve();
    return c.isPresent()
        ? f.apply(c.get(), model)
        : new Sparsified<>(model, SparsifyReport.noConfig());
  }

  public static Sparsified<MultiLayerConfiguration> apply(MultiLayerConfiguration conf) {
    return resolved(conf, Sparsify::apply);
  }

  public static Sparsified<ComputationGraphConfiguration> apply(
      ComputationGraphConfiguration conf) {
    return resolved(conf, Sparsify::apply);
  }

  public static Sparsified<MultiLayerNetwork> apply(MultiLayerNetwork net) {
    return resolved(net, Sparsify::apply);
  }

  public static Sparsified<ComputationGraph> apply(ComputationGraph net) {
    return resolved(net, Sparsify::apply);
  }

  public static Sparsified<SameDiff> apply(SameDiff sd) {
    return resolved(sd, Sparsify::apply);
  }

  // ------------------------------------------------------------------ configurations
  public static Sparsified<MultiLayerConfiguration> apply(
      SparsityConfig cfg, MultiLayerConfiguration conf) {
    requireModel(conf);
    if (cfg == null) {
      return new Sparsified<>(conf, SparsifyReport.noConfig());
    }
    MultiLayerConfiguration out = conf.clone();
    SparsifyPlan plan = SparsifyPlan.of(cfg, SparsifyPlan.refs(out));
    return new Sparsified<>(out, plan.report(cfg, null));
  }

  public static Sparsified<ComputationGraphConfiguration> apply(
      SparsityConfig cfg, ComputationGraphConfiguration conf) {
    requireModel(conf);
    if (cfg == null) {
      return new Sparsified<>(conf, SparsifyReport.noConfig());
    }
    ComputationGraphConfiguration out = conf.clone();
    SparsifyPlan plan = SparsifyPlan.of(cfg, SparsifyPlan.refs(out), null, out.getVertexInputs());
    return new Sparsified<>(out, plan.report(cfg, null));
  }

  // ------------------------------------------------------------------ initialised networks
  public static Sparsified<MultiLayerNetwork> apply(SparsityConfig cfg, MultiLayerNetwork net) {
    requireModel(net);
    if (cfg == null) {
      return new Sparsified<>(net, SparsifyReport.noConfig());
    }
    requireInitialised(net.params(), "MultiLayerNetwork");
    MultiLayerConfiguration conf = net.getLayerWiseConfigurations().clone();
    List<SparsifyPlan.LayerRef> refs = SparsifyPlan.refs(conf);
    Map<String, Integer> index = new LinkedHashMap<>();
    for (int i = 0; i < refs.size(); i++) {
      index.put(refs.get(i).name(), i);
    }
    SparsifyPlan plan =
        SparsifyPlan.of(
            cfg, refs, name -> unwrap(net.getLayer(index.get(name))).paramTable(), null);
    MultiLayerNetwork out = new MultiLayerNetwork(conf);
    out.init();
    Map<String, Double> measured = new LinkedHashMap<>();
    for (int i = 0; i < refs.size(); i++) {
      ParamTransfer.transfer(cfg, plan, refs.get(i), net.getLayer(i), out.getLayer(i), measured);
    }
    return new Sparsified<>(out, plan.report(cfg, measured));
  }

  public static Sparsified<ComputationGraph> apply(SparsityConfig cfg, ComputationGraph net) {
    requireModel(net);
    if (cfg == null) {
      return new Sparsified<>(net, SparsifyReport.noConfig());
    }
    requireInitialised(net.params(), "ComputationGraph");
    ComputationGraphConfiguration conf = net.getConfiguration().clone();
    List<SparsifyPlan.LayerRef> refs = SparsifyPlan.refs(conf);
    SparsifyPlan plan =
        SparsifyPlan.of(
            cfg, refs, name -> unwrap(net.getLayer(name)).paramTable(), conf.getVertexInputs());
    ComputationGraph out = new ComputationGraph(conf);
    out.init();
    Map<String, Double> measured = new LinkedHashMap<>();
    for (SparsifyPlan.LayerRef r : refs) {
      ParamTransfer.transfer(
          cfg, plan, r, net.getLayer(r.name()), out.getLayer(r.name()), measured);
    }
    return new Sparsified<>(out, plan.report(cfg, measured));
  }

  /**
   * Rewrites the graph in place (matmuls with trainable rank-2 weights, causal attention) and
   * returns it. With {@code storage: packed} and a block pattern, a weight whose uses are all
   * linear becomes a variable of its kept blocks only (the report says which stay masked, and why).
   */
  public static Sparsified<SameDiff> apply(SparsityConfig cfg, SameDiff sd) {
    requireModel(sd);
    if (cfg == null) {
      return new Sparsified<>(sd, SparsifyReport.noConfig());
    }
    return new Sparsified<>(sd, SameDiffSparsifier.rewrite(cfg, sd, Map.of()));
  }

  /**
   * {@link #apply(SparsityConfig, SameDiff)} with given masks: each weight named in {@code masks}
   * starts from its given mask (pattern = the config's, shape = the weight's) instead of a drawn
   * one, and no head-aware adjustment touches it. MST on packed storage uses this to pack at its
   * own first masks ({@code MstListener.firstMasks}), so its packed and masked runs start alike.
   *
   * @throws IllegalArgumentException before any change to the graph, if a mask names no trainable
   *     rank-2 weight or one the config's include/exclude leaves out, has another shape, or another
   *     pattern than the config's (and, while rewriting, if the config keeps a given weight dense
   *     for another reason: a first/last layer kept dense, a use that cannot be rewritten)
   */
  public static Sparsified<SameDiff> apply(
      SparsityConfig cfg, SameDiff sd, Map<String, ? extends SparseMask> masks) {
    requireModel(sd);
    if (cfg == null) {
      throw new IllegalArgumentException(
          "cfg = null is not allowed with given masks; allowed: a SparsityConfig");
    }
    return new Sparsified<>(sd, SameDiffSparsifier.rewrite(cfg, sd, Map.copyOf(masks)));
  }

  // ------------------------------------------------------------------ densify
  /**
   * A copy of {@code conf} with SparseFlow layers replaced by stock DL4J ones where one exists
   * ({@code SparseDenseLayer -> DenseLayer}, {@code SparseOutputLayer -> OutputLayer}).
   */
  public static MultiLayerConfiguration densify(MultiLayerConfiguration conf) {
    MultiLayerConfiguration out = conf.clone();
    for (NeuralNetConfiguration nnc : out.getConfs()) {
      Layer d = densifyLayer(nnc.getLayer());
      if (d != null) {
        nnc.setLayer(d);
      }
    }
    return out;
  }

  public static ComputationGraphConfiguration densify(ComputationGraphConfiguration conf) {
    ComputationGraphConfiguration out = conf.clone();
    for (GraphVertex v : out.getVertices().values()) {
      if (v instanceof LayerVertex lv) {
        Layer d = densifyLayer(lv.getLayerConf().getLayer());
        if (d != null) {
          lv.getLayerConf().setLayer(d);
        }
      }
    }
    return out;
  }

  /**
   * A stock DL4J network with the masks folded into the weights (exact zeros in place): same
   * outputs, loads without the plugin when every layer has a stock equivalent
   * (CausalSelfAttentionLayer has none: it stays, without masks).
   */
  public static MultiLayerNetwork densify(MultiLayerNetwork net) {
    MultiLayerNetwork out = new MultiLayerNetwork(densify(net.getLayerWiseConfigurations()));
    out.init();
    for (int i = 0; i < net.getnLayers(); i++) {
      ParamTransfer.copyFolded(net.getLayer(i), out.getLayer(i));
    }
    return out;
  }

  public static ComputationGraph densify(ComputationGraph net) {
    ComputationGraph out = new ComputationGraph(densify(net.getConfiguration()));
    out.init();
    // qualified: the imported Layer is the configuration layer
    for (org.deeplearning4j.nn.api.Layer l : net.getLayers()) {
      ParamTransfer.copyFolded(l, out.getLayer(l.getConfig().getLayerName()));
    }
    return out;
  }

  /**
   * Replaces the SparseFlow ops of a rewritten graph, in place, by stock ops with identical
   * outputs: sparse matmuls by plain matmuls of the (zero-filled) weights, sparse attention by
   * masked dense attention. The sequence length is read from the static shape of the attention
   * inputs; use {@link #densify(SameDiff, int)} when it is not known statically.
   */
  public static SameDiff densify(SameDiff sd) {
    return densify(sd, 0);
  }

  /** As {@link #densify(SameDiff)}, for attention inputs of sequence length {@code seqLen}. */
  public static SameDiff densify(SameDiff sd, int seqLen) {
    SameDiffSparsifier.densify(sd, seqLen);
    return sd;
  }

  // ------------------------------------------------------------------ internals
  /** The layer inside DL4J wrapper layers (TimeDistributed, ...), else the layer itself. */
  // qualified: the imported Layer is the configuration layer
  public static org.deeplearning4j.nn.api.Layer unwrap(org.deeplearning4j.nn.api.Layer l) {
    while (l instanceof BaseWrapperLayer w) {
      l = w.getUnderlying();
    }
    return l;
  }

  private static Layer densifyLayer(Layer l) {
    for (LayerSparsifier s : LayerSparsifiers.all()) {
      Layer d = s.densify(l);
      if (d != null) {
        return d;
      }
    }
    return null;
  }

  private static void requireModel(Object m) {
    if (m == null) {
      throw new IllegalArgumentException(
          "model = null; allowed: a MultiLayerConfiguration, ComputationGraphConfiguration,"
              + " initialised MultiLayerNetwork/ComputationGraph or SameDiff");
    }
  }

  private static void requireInitialised(INDArray params, String what) {
    if (params == null) {
      throw new IllegalArgumentException(
          "model = a "
              + what
              + " that is not initialised; call init() first or pass its configuration");
    }
  }
}
