package org.sparseflow.layers.sparsify;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.SparseWeightLayer;
import org.sparseflow.layers.samediff.SameDiffSparsifier;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.layers.spi.LayerSparsifier;
import org.sparseflow.layers.spi.LayerSparsifiers;
import org.sparseflow.layers.spi.LayerSparsity;
import org.sparseflow.ops.pattern.PatternSpec;
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
      T model, java.util.function.BiFunction<SparsityConfig, T, Sparsified<T>> f) {
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
    List<LayerRef> refs = new ArrayList<>();
    for (int i = 0; i < out.getConfs().size(); i++) {
      NeuralNetConfiguration nnc = out.getConf(i);
      Layer l = nnc.getLayer();
      String name = l.getLayerName() != null ? l.getLayerName() : String.valueOf(i);
      refs.add(new LayerRef(name, String.valueOf(i), l, nnc::setLayer));
    }
    Plan plan = plan(cfg, refs);
    return new Sparsified<>(out, plan.report(cfg, null));
  }

  public static Sparsified<ComputationGraphConfiguration> apply(
      SparsityConfig cfg, ComputationGraphConfiguration conf) {
    requireModel(conf);
    if (cfg == null) {
      return new Sparsified<>(conf, SparsifyReport.noConfig());
    }
    ComputationGraphConfiguration out = conf.clone();
    List<LayerRef> refs = new ArrayList<>();
    for (String name : vertexOrder(out)) {
      GraphVertex v = out.getVertices().get(name);
      if (v instanceof LayerVertex lv) {
        NeuralNetConfiguration nnc = lv.getLayerConf();
        refs.add(new LayerRef(name, name, nnc.getLayer(), nnc::setLayer));
      }
    }
    Plan plan = plan(cfg, refs);
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
    List<LayerRef> refs = new ArrayList<>();
    for (int i = 0; i < conf.getConfs().size(); i++) {
      NeuralNetConfiguration nnc = conf.getConf(i);
      Layer l = nnc.getLayer();
      String name = l.getLayerName() != null ? l.getLayerName() : String.valueOf(i);
      refs.add(new LayerRef(name, String.valueOf(i), l, nnc::setLayer));
    }
    Plan plan = plan(cfg, refs);
    MultiLayerNetwork out = new MultiLayerNetwork(conf);
    out.init();
    Map<String, Double> measured = new LinkedHashMap<>();
    for (int i = 0; i < refs.size(); i++) {
      LayerRef r = refs.get(i);
      transfer(cfg, plan, r, net.getLayer(i), out.getLayer(i), measured);
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
    List<LayerRef> refs = new ArrayList<>();
    for (String name : vertexOrder(conf)) {
      GraphVertex v = conf.getVertices().get(name);
      if (v instanceof LayerVertex lv) {
        NeuralNetConfiguration nnc = lv.getLayerConf();
        refs.add(new LayerRef(name, name, nnc.getLayer(), nnc::setLayer));
      }
    }
    Plan plan = plan(cfg, refs);
    ComputationGraph out = new ComputationGraph(conf);
    out.init();
    Map<String, Double> measured = new LinkedHashMap<>();
    for (LayerRef r : refs) {
      transfer(cfg, plan, r, net.getLayer(r.name()), out.getLayer(r.name()), measured);
    }
    return new Sparsified<>(out, plan.report(cfg, measured));
  }

  /**
   * Rewrites the graph in place (matmuls with trainable rank-2 weights, causal attention) and
   * returns it.
   */
  public static Sparsified<SameDiff> apply(SparsityConfig cfg, SameDiff sd) {
    requireModel(sd);
    if (cfg == null) {
      return new Sparsified<>(sd, SparsifyReport.noConfig());
    }
    return new Sparsified<>(sd, SameDiffSparsifier.rewrite(cfg, sd));
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
      copyFolded(net.getLayer(i), out.getLayer(i));
    }
    return out;
  }

  public static ComputationGraph densify(ComputationGraph net) {
    ComputationGraph out = new ComputationGraph(densify(net.getConfiguration()));
    out.init();
    for (org.deeplearning4j.nn.api.Layer l : net.getLayers()) {
      copyFolded(l, out.getLayer(l.getConfig().getLayerName()));
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
  record LayerRef(String name, String paramPrefix, Layer layer, Consumer<Layer> setter) {}

  private record Choice(
      LayerRef ref,
      LayerSparsifier sparsifier,
      LayerSparsity target,
      Layer replacement,
      Entry entry) {}

  private record Plan(List<Choice> choices) {
    SparsifyReport report(SparsityConfig cfg, Map<String, Double> measured) {
      List<Entry> es = new ArrayList<>();
      for (Choice c : choices) {
        Entry e = c.entry();
        if (measured != null && measured.containsKey(e.name())) {
          e = e.withMeasuredDensity(measured.get(e.name()));
        }
        es.add(e);
      }
      return new SparsifyReport(describe(cfg), es);
    }
  }

  private static String describe(SparsityConfig cfg) {
    return "pattern="
        + cfg.getPattern()
        + " sparsity="
        + cfg.getSparsity()
        + " distribution="
        + cfg.getDistribution()
        + " initialMask="
        + cfg.getInitialMask()
        + " seed="
        + cfg.getSeed();
  }

  private static Plan plan(SparsityConfig cfg, List<LayerRef> refs) {
    List<LayerSparsifier> sparsifiers = LayerSparsifiers.all();
    List<SparsityPlanner.Item> items = new ArrayList<>();
    List<String> allNames = new ArrayList<>();
    Map<String, LayerSparsifier> chosen = new LinkedHashMap<>();
    for (LayerRef r : refs) {
      allNames.add(r.name());
      if (!r.paramPrefix().equals(r.name())) {
        allNames.add(r.paramPrefix());
      }
      for (String k : paramKeys(r.layer())) {
        allNames.add(r.paramPrefix() + "_" + k);
      }
      LayerSparsifier s = LayerSparsifiers.find(sparsifiers, r.layer(), cfg);
      if (s == null) {
        continue;
      }
      chosen.put(r.name(), s);
      Map<String, long[]> shapes = s.weightShapes(r.layer());
      if (shapes.isEmpty()) {
        continue;
      }
      List<String> names = new ArrayList<>();
      names.add(r.name());
      for (String k : shapes.keySet()) {
        names.add(r.paramPrefix() + "_" + k);
      }
      items.add(new SparsityPlanner.Item(r.name(), names, shapes));
    }
    Map<String, SparsityPlanner.Decision> decisions = SparsityPlanner.plan(cfg, items, allNames);
    PatternSpec spec = PatternSpec.parse(cfg.getPattern());
    List<Choice> choices = new ArrayList<>();
    for (LayerRef r : refs) {
      String type = r.layer().getClass().getSimpleName();
      LayerSparsifier s = chosen.get(r.name());
      if (s == null) {
        if (hasParams(r.layer())) {
          String unsupported = DenseReasons.unsupportedKind(r.layer());
          String notApplied = DenseReasons.attentionNotApplied(cfg, r.name(), r.layer());
          String why =
              unsupported != null
                  ? "unsupported: " + unsupported + " layers stay dense (no sparse version)"
                  : "no LayerSparsifier supports " + type;
          choices.add(
              new Choice(
                  r,
                  null,
                  null,
                  null,
                  new Entry(
                      r.name(),
                      type,
                      type,
                      unsupported != null ? Status.UNSUPPORTED : Status.DENSE,
                      null,
                      1.0,
                      Double.NaN,
                      null,
                      0,
                      notApplied == null ? why : why + "; " + notApplied)));
        }
        continue;
      }
      SparsityPlanner.Decision d = decisions.get(r.name());
      long weights = 0;
      for (long[] sh : s.weightShapes(r.layer()).values()) {
        weights += sh[0] * sh[1];
      }
      boolean sparseW = d != null && d.sparse();
      String attn = null;
      if (s.hasAttention(r.layer())
          && cfg.getAttention() != null
          && cfg.getAttention().sparseAttentionRequested()
          && cfg.attentionSelects(r.name())) {
        attn = cfg.getAttention().getPattern().trim();
      }
      boolean replace = sparseW || attn != null || s.replaceEvenIfDense(r.layer(), cfg);
      String reason = d == null ? (weights == 0 ? "no maskable weights" : null) : d.reason();
      if (!replace) {
        choices.add(
            new Choice(
                r,
                s,
                null,
                null,
                new Entry(
                    r.name(),
                    type,
                    type,
                    Status.DENSE,
                    null,
                    1.0,
                    Double.NaN,
                    null,
                    weights,
                    reason)));
        continue;
      }
      int bs = cfg.getAttention() == null ? 16 : cfg.getAttention().getBlockSize();
      LayerSparsity target =
          new LayerSparsity(sparseW, spec.toString(), sparseW ? d.density() : 1.0, attn, bs);
      Layer repl = s.sparsify(r.layer(), target, cfg);
      r.setter().accept(repl);
      Status st =
          sparseW ? Status.SPARSE : attn != null ? Status.SPARSE_ATTENTION : Status.REPLACED_DENSE;
      choices.add(
          new Choice(
              r,
              s,
              target,
              repl,
              new Entry(
                  r.name(),
                  type,
                  repl.getClass().getSimpleName(),
                  st,
                  sparseW ? spec.toString() : null,
                  target.density(),
                  Double.NaN,
                  attn,
                  weights,
                  (reason == null ? "" : reason) + " [" + s.name() + "]")));
      log.debug("Sparsify {}: {} -> {} ({})", r.name(), type, repl.getClass().getSimpleName(), st);
    }
    return new Plan(choices);
  }

  /**
   * Copies parameters old -> new layer and sets masks for a replaced layer; records the measured
   * density.
   */
  private static void transfer(
      SparsityConfig cfg,
      Plan plan,
      LayerRef r,
      org.deeplearning4j.nn.api.Layer oldL,
      org.deeplearning4j.nn.api.Layer newL,
      Map<String, Double> measured) {
    oldL = unwrap(oldL);
    newL = unwrap(newL);
    Choice c = null;
    for (Choice ch : plan.choices()) {
      if (ch.ref() == r) {
        c = ch;
      }
    }
    Map<String, INDArray> oldP = oldL.paramTable(), newP = newL.paramTable();
    Map<String, String> mapping =
        c != null && c.sparsifier() != null && c.replacement() != null
            ? c.sparsifier().paramMapping(r.layer(), c.replacement())
            : Map.of();
    List<String> reinit = new ArrayList<>();
    for (Map.Entry<String, INDArray> e : newP.entrySet()) {
      String src = mapping.getOrDefault(e.getKey(), e.getKey());
      INDArray o = oldP.get(src);
      if (o != null
          && o.length() == e.getValue().length()
          && Math.max(o.size(-1), 1) == Math.max(e.getValue().size(-1), 1)) {
        // same values; DL4J biases are [nOut] where the plugin's are [1, nOut]
        e.getValue().assign(o.reshape(e.getValue().shape()));
      } else if (!(newL instanceof SparseWeightLayer sw && isMaskKey(sw, e.getKey()))) {
        reinit.add(e.getKey());
      }
    }
    if (c != null && !reinit.isEmpty() && c.replacement() != null) {
      // the entry's reason tells the user these started fresh
      int idx = plan.choices().indexOf(c);
      plan.choices()
          .set(
              idx,
              new Choice(
                  c.ref(),
                  c.sparsifier(),
                  c.target(),
                  c.replacement(),
                  c.entry()
                      .withReason(
                          c.entry().reason()
                              + " (parameters "
                              + reinit
                              + " initialised fresh: layout differs)")));
    }
    if (!(newL instanceof SparseWeightLayer sw)) {
      return;
    }
    boolean remask = c != null && c.target() != null && c.target().sparseWeights();
    PatternSpec spec = PatternSpec.parse(remask ? c.target().pattern() : cfg.getPattern());
    long kept = 0, total = 0;
    for (String wk : sw.sparseWeightKeys()) {
      INDArray w = newP.get(wk), m = newP.get(sw.maskKey(wk));
      if (remask) {
        SparseMask mask =
            cfg.getInitialMask() == InitialMask.MAGNITUDE
                ? spec.fromMagnitude(w, c.target().density())
                : spec.random(
                    w.rows(),
                    w.columns(),
                    c.target().density(),
                    cfg.getSeed() * 31 + (r.name() + "/" + wk).hashCode());
        m.assign(mask.toDense(m.dataType()));
      }
      if (m != null) {
        kept += m.neq(0).castTo(org.nd4j.linalg.api.buffer.DataType.LONG).sumNumber().longValue();
        total += m.length();
      }
    }
    sw.applyMasks();
    if (total > 0) {
      measured.put(r.name(), (double) kept / total);
    }
  }

  private static boolean isMaskKey(SparseWeightLayer sw, String key) {
    for (String wk : sw.sparseWeightKeys()) {
      if (key.equals(sw.maskKey(wk))) {
        return true;
      }
    }
    return false;
  }

  /** The layer inside DL4J wrapper layers (TimeDistributed, ...), else the layer itself. */
  public static org.deeplearning4j.nn.api.Layer unwrap(org.deeplearning4j.nn.api.Layer l) {
    while (l instanceof org.deeplearning4j.nn.layers.wrapper.BaseWrapperLayer w) {
      l = w.getUnderlying();
    }
    return l;
  }

  private static void copyFolded(
      org.deeplearning4j.nn.api.Layer from, org.deeplearning4j.nn.api.Layer to) {
    from = unwrap(from);
    to = unwrap(to);
    Map<String, INDArray> src = from.paramTable(), dst = to.paramTable();
    Map<String, String> maskOf = new LinkedHashMap<>();
    if (from instanceof SparseWeightLayer sw) {
      for (String wk : sw.sparseWeightKeys()) {
        maskOf.put(wk, sw.maskKey(wk));
      }
    }
    for (Map.Entry<String, INDArray> e : dst.entrySet()) {
      INDArray s = src.get(e.getKey());
      if (s == null) {
        continue;
      }
      String mk = maskOf.get(e.getKey());
      INDArray m = mk == null ? null : src.get(mk);
      INDArray v = m == null ? s : s.mul(m);
      e.getValue().assign(v.reshape(e.getValue().shape()));
    }
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

  private static List<String> paramKeys(Layer l) {
    try {
      return l.initializer().paramKeys(l);
    } catch (RuntimeException e) {
      return List.of();
    }
  }

  private static boolean hasParams(Layer l) {
    try {
      return l.initializer().numParams(l) > 0;
    } catch (RuntimeException e) {
      return false;
    }
  }

  static List<String> vertexOrder(ComputationGraphConfiguration conf) {
    List<String> order = conf.getTopologicalOrderStr();
    if (order != null && !order.isEmpty()) {
      return order;
    }
    // fall back: Kahn's algorithm over vertexInputs
    Map<String, List<String>> in = conf.getVertexInputs();
    List<String> out = new ArrayList<>(conf.getNetworkInputs());
    java.util.Set<String> done = new java.util.HashSet<>(out);
    boolean progress = true;
    while (progress) {
      progress = false;
      for (String v : conf.getVertices().keySet()) {
        if (done.contains(v)) {
          continue;
        }
        if (done.containsAll(in.getOrDefault(v, List.of()))) {
          out.add(v);
          done.add(v);
          progress = true;
        }
      }
    }
    return out;
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
