package org.sparseflow.layers.api;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.layers.wrapper.BaseWrapperLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.sparseflow.layers.nn.SparseAttentionLayer;
import org.sparseflow.layers.nn.SparseWeightLayer;

/**
 * Finds the masked (sparse) weights and the switchable attention layers of a DL4J model (also
 * inside wrapper layers such as TimeDistributed), so that tools such as the MST scheduler can read
 * and change masks without knowing the layer types.
 */
public final class SparseParams {
  private SparseParams() {}

  /**
   * All masked weights of an initialised {@link MultiLayerNetwork} or {@link ComputationGraph}, in
   * layer order. Names follow DL4J's param table: "0_W" (network index) or "attn1_Wq" (graph vertex
   * name).
   *
   * @throws IllegalArgumentException for other model types or a network that is not initialised
   */
  public static List<SparseParam> find(Model model) {
    List<SparseParam> out = new ArrayList<>();
    forEachWeight(
        model,
        (l, s, key, name) -> {
          if (s.packedLayout(key) != null || s.packedNmLayout(key) != null) {
            throw new IllegalArgumentException(
                "weight '"
                    + name
                    + "' is stored packed (storage = packed, a block layout without a mask"
                    + " param): SparseParam and its mask edits need storage = masked; allowed:"
                    + " SparseParams.findPacked(model) to read, write and relayout packed weights"
                    + " (what MST uses for them), or SparseParams.findMasked(model)");
          }
          out.add(new SparseParam(model, l, s, key, name));
        });
    return Collections.unmodifiableList(out);
  }

  /**
   * The masked weights of an initialised {@link MultiLayerNetwork} or {@link ComputationGraph}, in
   * layer order, named like {@link #find}; packed weights are left out (see {@link #findPacked}).
   *
   * @throws IllegalArgumentException for other model types or a network that is not initialised
   */
  public static List<SparseParam> findMasked(Model model) {
    List<SparseParam> out = new ArrayList<>();
    forEachWeight(
        model,
        (l, s, key, name) -> {
          if (s.packedLayout(key) == null && s.packedNmLayout(key) == null) {
            out.add(new SparseParam(model, l, s, key, name));
          }
        });
    return Collections.unmodifiableList(out);
  }

  /**
   * All packed (storage = packed) weights of an initialised {@link MultiLayerNetwork} or {@link
   * ComputationGraph}, in layer order, named like {@link #find}.
   *
   * @throws IllegalArgumentException for other model types or a network that is not initialised
   */
  public static List<PackedSparseParam> findPacked(Model model) {
    List<PackedSparseParam> out = new ArrayList<>();
    forEachWeight(
        model,
        (l, s, key, name) -> {
          if (s.packedLayout(key) != null || s.packedNmLayout(key) != null) {
            out.add(new PackedSparseParam(model, l, s, key, name));
          }
        });
    return Collections.unmodifiableList(out);
  }

  /** One weight of a {@link SparseWeightLayer}, with its param-table name ("0_W", "attn1_Wq"). */
  private interface WeightVisitor {
    void visit(Layer layer, SparseWeightLayer sparse, String key, String name);
  }

  /** Every weight key of every sparse weight layer of the model (inside wrappers too). */
  private static void forEachWeight(Model model, WeightVisitor visitor) {
    for (Layer l : layers(model)) {
      SparseWeightLayer s = unwrap(l, SparseWeightLayer.class);
      if (s == null) {
        continue;
      }
      String prefix = paramPrefix(model, l);
      for (String key : s.sparseWeightKeys()) {
        visitor.visit(l, s, key, prefix + "_" + key);
      }
    }
  }

  /**
   * The attention layers of a model whose sparsity pattern can be switched, in layer order (inside
   * wrappers too).
   */
  public static List<SparseAttentionLayer> attentionLayers(Model model) {
    List<SparseAttentionLayer> out = new ArrayList<>();
    for (Layer l : layers(model)) {
      SparseAttentionLayer a = unwrap(l, SparseAttentionLayer.class);
      if (a != null) {
        out.add(a);
      }
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * The layers of an initialised {@link MultiLayerNetwork} or {@link ComputationGraph}.
   *
   * @throws IllegalArgumentException for other model types or a network that is not initialised
   */
  public static Layer[] layers(Model model) {
    Layer[] layers;
    if (model instanceof MultiLayerNetwork) {
      layers = ((MultiLayerNetwork) model).getLayers();
    } else if (model instanceof ComputationGraph) {
      layers = ((ComputationGraph) model).getLayers();
    } else {
      throw new IllegalArgumentException(
          "model = "
              + (model == null ? "null" : model.getClass().getName())
              + " is not supported; allowed: MultiLayerNetwork, ComputationGraph");
    }
    if (layers == null) {
      throw new IllegalArgumentException(
          "model is not initialised (layers = null); allowed: a network after init()");
    }
    return layers;
  }

  /** Prefix of a layer's params in the model's param table: the index ("0") or vertex name. */
  public static String paramPrefix(Model model, Layer l) {
    return model instanceof ComputationGraph
        ? l.conf().getLayer().getLayerName()
        : String.valueOf(l.getIndex());
  }

  /** The layer itself or the first layer inside its wrappers that is a {@code type}, else null. */
  private static <T> T unwrap(Layer l, Class<T> type) {
    Layer impl = l;
    while (!type.isInstance(impl) && impl instanceof BaseWrapperLayer w) {
      impl = w.getUnderlying();
    }
    return type.isInstance(impl) ? type.cast(impl) : null;
  }

  /** The masked weight with this name ("0_W", "attn1_Wq", ...). */
  public static SparseParam get(Model model, String name) {
    List<SparseParam> all = find(model);
    for (SparseParam p : all) {
      if (p.name().equals(name)) {
        return p;
      }
    }
    List<String> names = new ArrayList<>();
    for (SparseParam p : all) {
      names.add(p.name());
    }
    throw new IllegalArgumentException(
        "name = '" + name + "' is not a masked weight of this model; allowed: " + names);
  }
}
