package org.sparseflow.layers.sparsify;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.SparsifyReport.Entry;
import org.sparseflow.layers.sparsify.SparsifyReport.Status;
import org.sparseflow.layers.spi.LayerSparsifier;
import org.sparseflow.layers.spi.LayerSparsifiers;
import org.sparseflow.layers.spi.LayerSparsity;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Which layers of a model {@link Sparsify} replaces and how: the layer references of a
 * configuration, the per-layer decisions (sparsifier, target density, attention pattern) and the
 * report entries.
 */
final class SparsifyPlan {
  private static final Logger log = LoggerFactory.getLogger(Sparsify.class);

  /** A layer configuration of the model, its names and how to replace it. */
  record LayerRef(String name, String paramPrefix, Layer layer, Consumer<Layer> setter) {}

  /** What was decided for one layer, and the report entry. */
  record Choice(
      LayerRef ref,
      LayerSparsifier sparsifier,
      LayerSparsity target,
      Layer replacement,
      Entry entry) {}

  /** Decides every layer and replaces the chosen layer configurations through their setters. */
  static SparsifyPlan of(SparsityConfig cfg, List<LayerRef> refs) {
    return of(cfg, refs, null, null);
  }

  /**
   * As {@link #of(SparsityConfig, List)}; {@code weightsOf} gives an initialised network's
   * parameters by layer name (null for a bare configuration), from which packed storage takes
   * magnitude masks; {@code graphInputs} is a ComputationGraph's vertex inputs (null for a
   * MultiLayerNetwork), from which keepFirstDense / keepLastDense count layers by depth.
   */
  static SparsifyPlan of(
      SparsityConfig cfg,
      List<LayerRef> refs,
      Function<String, Map<String, INDArray>> weightsOf,
      Map<String, List<String>> graphInputs) {
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
    Map<String, SparsityPlanner.Decision> decisions =
        graphInputs == null
            ? SparsityPlanner.plan(cfg, items, allNames)
            : planByDepth(cfg, items, allNames, graphInputs);
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
              dense(
                  r,
                  null,
                  0,
                  notApplied == null ? why : why + "; " + notApplied,
                  unsupported != null ? Status.UNSUPPORTED : Status.DENSE));
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
        choices.add(dense(r, s, weights, reason));
        continue;
      }
      int bs = cfg.getAttention() == null ? 16 : cfg.getAttention().getBlockSize();
      Map<String, int[]> layouts =
          sparseW && cfg.packedStorage()
              ? packedLayouts(cfg, spec, r, s.weightShapes(r.layer()), d.density(), weightsOf)
              : Map.of();
      LayerSparsity target =
          new LayerSparsity(
              sparseW,
              spec.toString(),
              sparseW ? d.density() : 1.0,
              attn,
              bs,
              cfg.getStorage(),
              layouts);
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
    return new SparsifyPlan(choices);
  }

  /**
   * The kept blocks of each weight for packed storage, chosen as {@link ParamTransfer} chooses
   * masked storage's masks: by magnitude from the trained weight when the config says MAGNITUDE and
   * the weight is known, else drawn with the config seed and the layer and weight names.
   */
  private static Map<String, int[]> packedLayouts(
      SparsityConfig cfg,
      PatternSpec spec,
      LayerRef r,
      Map<String, long[]> shapes,
      double density,
      Function<String, Map<String, INDArray>> weightsOf) {
    Map<String, INDArray> old = weightsOf == null ? Map.of() : weightsOf.apply(r.name());
    Map<String, int[]> out = new LinkedHashMap<>();
    for (Map.Entry<String, long[]> e : shapes.entrySet()) {
      long[] sh = e.getValue();
      INDArray w = old.get(e.getKey());
      boolean magnitude =
          cfg.getInitialMask() == InitialMask.MAGNITUDE
              && w != null
              && w.rank() == 2
              && w.rows() == sh[0]
              && w.columns() == sh[1];
      SparseMask m =
          magnitude
              ? spec.fromMagnitude(w, density)
              : spec.random(
                  sh[0], sh[1], density, ParamTransfer.maskSeed(cfg, r.name(), e.getKey()));
      out.put(
          e.getKey(),
          m instanceof NMMask nm
              ? PackedNmLayout.of(nm).indexWords()
              : PackedLayout.of((BlockMask) m).keptRowMajor());
    }
    return out;
  }

  /**
   * The plan of a ComputationGraph, where the first and last layers are those at the smallest and
   * the largest depth: the largest number of layers with maskable weights on any path from the
   * network inputs (a shallow auxiliary head declared last counts as first, not last).
   */
  private static Map<String, SparsityPlanner.Decision> planByDepth(
      SparsityConfig cfg,
      List<SparsityPlanner.Item> items,
      List<String> allNames,
      Map<String, List<String>> graphInputs) {
    Set<String> itemNames = new HashSet<>();
    items.forEach(it -> itemNames.add(it.name()));
    Map<String, Integer> memo = new HashMap<>();
    int min = Integer.MAX_VALUE;
    int max = Integer.MIN_VALUE;
    for (SparsityPlanner.Item it : items) {
      int d = depth(it.name(), graphInputs, itemNames, memo, new HashSet<>());
      min = Math.min(min, d);
      max = Math.max(max, d);
    }
    Set<String> first = new HashSet<>();
    Set<String> last = new HashSet<>();
    for (SparsityPlanner.Item it : items) {
      int d = memo.get(it.name());
      if (d == min) {
        first.add(it.name());
      }
      if (d == max) {
        last.add(it.name());
      }
    }
    String note =
        " (by depth from the inputs: first = depth " + min + ", last = depth " + max + ")";
    return SparsityPlanner.plan(cfg, items, allNames, first, last, note);
  }

  /** Layers with maskable weights on the longest path from the inputs to {@code v}, v included. */
  private static int depth(
      String v,
      Map<String, List<String>> inputs,
      Set<String> items,
      Map<String, Integer> memo,
      Set<String> visiting) {
    Integer known = memo.get(v);
    if (known != null) {
      return known;
    }
    int d = 0;
    if (visiting.add(v)) { // a well-formed graph has no cycles; guard anyway
      for (String u : inputs.getOrDefault(v, List.of())) {
        d = Math.max(d, depth(u, inputs, items, memo, visiting));
      }
      visiting.remove(v);
    }
    d += items.contains(v) ? 1 : 0;
    memo.put(v, d);
    return d;
  }

  /** A layer left as it is, with the reason. */
  private static Choice dense(LayerRef r, LayerSparsifier s, long weights, String reason) {
    return dense(r, s, weights, reason, Status.DENSE);
  }

  private static Choice dense(
      LayerRef r, LayerSparsifier s, long weights, String reason, Status status) {
    String type = r.layer().getClass().getSimpleName();
    return new Choice(
        r,
        s,
        null,
        null,
        new Entry(r.name(), type, type, status, null, 1.0, Double.NaN, null, weights, reason));
  }

  private final List<Choice> choices;

  private SparsifyPlan(List<Choice> choices) {
    this.choices = choices;
  }

  /** The decisions, in layer order (mutable: parameter transfer amends reasons). */
  List<Choice> choices() {
    return choices;
  }

  SparsifyReport report(SparsityConfig cfg, Map<String, Double> measured) {
    List<Entry> es = new ArrayList<>();
    for (Choice c : choices) {
      Entry e = c.entry();
      if (measured != null && measured.containsKey(e.name())) {
        e = e.withMeasuredDensity(measured.get(e.name()));
      }
      es.add(e);
    }
    return new SparsifyReport(SparsifyReport.describe(cfg), es);
  }

  /** The layers of a network configuration, named by layer name or index. */
  static List<LayerRef> refs(MultiLayerConfiguration conf) {
    List<LayerRef> refs = new ArrayList<>();
    for (int i = 0; i < conf.getConfs().size(); i++) {
      NeuralNetConfiguration nnc = conf.getConf(i);
      Layer l = nnc.getLayer();
      String name = l.getLayerName() != null ? l.getLayerName() : String.valueOf(i);
      refs.add(new LayerRef(name, String.valueOf(i), l, nnc::setLayer));
    }
    return refs;
  }

  /** The layer vertices of a graph configuration, in topological order. */
  static List<LayerRef> refs(ComputationGraphConfiguration conf) {
    List<LayerRef> refs = new ArrayList<>();
    for (String name : vertexOrder(conf)) {
      GraphVertex v = conf.getVertices().get(name);
      if (v instanceof LayerVertex lv) {
        NeuralNetConfiguration nnc = lv.getLayerConf();
        refs.add(new LayerRef(name, name, nnc.getLayer(), nnc::setLayer));
      }
    }
    return refs;
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
    Set<String> done = new HashSet<>(out);
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
}
