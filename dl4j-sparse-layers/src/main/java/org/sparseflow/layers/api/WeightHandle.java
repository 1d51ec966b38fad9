package org.sparseflow.layers.api;

import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.sparseflow.layers.nn.SparseWeightLayer;

/**
 * Where one sparse weight of a DL4J model lives: the model, the model's layer that holds it, the
 * layer implementation, the weight's key in that layer and its param-table name. The common part of
 * {@link SparseParam} and {@link PackedSparseParam}.
 */
abstract class WeightHandle {
  final Model model;
  final Layer modelLayer;
  final SparseWeightLayer layer;
  final String key;
  final String name;

  WeightHandle(Model model, Layer modelLayer, SparseWeightLayer layer, String key, String name) {
    this.model = model;
    this.modelLayer = modelLayer;
    this.layer = layer;
    this.key = key;
    this.name = name;
  }

  /** Param-table name, e.g. "0_W", "attn1_Wq" or "h0_fc_W". */
  public String name() {
    return name;
  }

  /**
   * The model's layer that holds the weight: the layer implementation itself, or the wrapper (e.g.
   * TimeDistributed) around it, which is how the model's updater knows the weight.
   */
  public Layer modelLayer() {
    return modelLayer;
  }

  /** Key of the weight inside its layer ("W", "Wq", ...). */
  public String weightKey() {
    return key;
  }
}
