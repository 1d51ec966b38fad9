package org.sparseflow.layers.api;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.sparseflow.layers.nn.SparseWeightLayer;

/**
 * Finds the masked (sparse) weights of a DL4J model, so that tools such as the MST scheduler can
 * read and change masks without knowing the layer types.
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
    Layer[] layers;
    boolean graph;
    if (model instanceof MultiLayerNetwork) {
      layers = ((MultiLayerNetwork) model).getLayers();
      graph = false;
    } else if (model instanceof ComputationGraph) {
      layers = ((ComputationGraph) model).getLayers();
      graph = true;
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
    List<SparseParam> out = new ArrayList<>();
    for (Layer l : layers) {
      if (!(l instanceof SparseWeightLayer)) {
        continue;
      }
      SparseWeightLayer s = (SparseWeightLayer) l;
      String prefix = graph ? l.conf().getLayer().getLayerName() : String.valueOf(l.getIndex());
      for (String key : s.sparseWeightKeys()) {
        out.add(new SparseParam(model, s, key, prefix + "_" + key));
      }
    }
    return Collections.unmodifiableList(out);
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
