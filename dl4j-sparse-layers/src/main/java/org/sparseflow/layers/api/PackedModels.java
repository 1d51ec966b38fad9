package org.sparseflow.layers.api;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.nn.PackedSlots;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * Rebuilds a DL4J model whose packed weights need a different number of block slots. DL4J fixes
 * each layer's parameter count when a network is built, so MST's capacity change at a phase
 * boundary (more slots for a phase that grows, fewer for one that prunes) is a new network: same
 * configuration except the slots, same parameters, optimizer state, iteration and epoch counts and
 * listeners. Both networks exist while the copy runs.
 */
public final class PackedModels {
  private PackedModels() {}

  /**
   * A copy of {@code model} in which each packed block weight named in {@code slots} (param-table
   * names, as {@link SparseParams#findPacked}) has that many block slots; its kept blocks keep
   * their values and optimizer state, spare slots hold zeros. The given model is left unchanged.
   *
   * @throws IllegalArgumentException for a name that is no packed block weight of the model, or
   *     slots below its kept blocks or above all its blocks (nothing is built then)
   */
  public static Model withSlots(Model model, Map<String, Integer> slots) {
    Map<String, PackedSparseParam> byName = new HashMap<>();
    for (PackedSparseParam p : SparseParams.findPacked(model)) {
      byName.put(p.name(), p);
    }
    for (String name : slots.keySet()) {
      PackedSparseParam p = byName.get(name);
      if (p == null || p.layout() == null) {
        throw new IllegalArgumentException(
            "slots names '"
                + name
                + "', which is no packed block weight of the model; allowed: "
                + byName.keySet());
      }
    }
    Model out;
    if (model instanceof MultiLayerNetwork net) {
      MultiLayerConfiguration conf = net.getLayerWiseConfigurations().clone();
      for (Map.Entry<String, Integer> e : slots.entrySet()) {
        PackedSparseParam p = byName.get(e.getKey());
        int index = p.modelLayer().getIndex();
        PackedSlots.set(conf.getConf(index).getLayer(), p.weightKey(), e.getValue());
      }
      conf.setIterationCount(net.getLayerWiseConfigurations().getIterationCount());
      conf.setEpochCount(net.getLayerWiseConfigurations().getEpochCount());
      MultiLayerNetwork copy = new MultiLayerNetwork(conf);
      copy.init();
      copy.setListeners(net.getListeners());
      out = copy;
    } else if (model instanceof ComputationGraph graph) {
      ComputationGraphConfiguration conf = graph.getConfiguration().clone();
      for (Map.Entry<String, Integer> e : slots.entrySet()) {
        PackedSparseParam p = byName.get(e.getKey());
        GraphVertex v = conf.getVertices().get(p.modelLayer().conf().getLayer().getLayerName());
        PackedSlots.set(((LayerVertex) v).getLayerConf().getLayer(), p.weightKey(), e.getValue());
      }
      conf.setIterationCount(graph.getConfiguration().getIterationCount());
      conf.setEpochCount(graph.getConfiguration().getEpochCount());
      ComputationGraph copy = new ComputationGraph(conf);
      copy.init();
      copy.setListeners(graph.getListeners());
      out = copy;
    } else {
      throw new IllegalArgumentException(
          "model = "
              + (model == null ? "null" : model.getClass().getName())
              + " is not supported; allowed: MultiLayerNetwork, ComputationGraph");
    }
    copyState(model, out, byName);
    return out;
  }

  /** Copies every param and its optimizer state; packed ones by their kept blocks. */
  private static void copyState(Model from, Model to, Map<String, PackedSparseParam> packed) {
    Layer[] a = SparseParams.layers(from);
    Layer[] b = SparseParams.layers(to);
    for (int i = 0; i < a.length; i++) {
      String prefix = SparseParams.paramPrefix(from, a[i]);
      for (Map.Entry<String, INDArray> e : a[i].paramTable().entrySet()) {
        INDArray src = e.getValue();
        INDArray dst = b[i].getParam(e.getKey());
        PackedSparseParam p = packed.get(prefix + "_" + e.getKey());
        PackedLayout l = p == null ? null : p.layout();
        copy(src, dst, l);
        List<INDArray> s = UpdaterStates.views(from, a[i], e.getKey(), src, false);
        if (s.isEmpty()) {
          continue;
        }
        List<INDArray> d = UpdaterStates.views(to, b[i], e.getKey(), dst, true);
        for (int k = 0; k < s.size(); k++) {
          copy(s.get(k), d.get(k), l);
        }
      }
    }
  }

  /** dst = src, or for a packed weight with layout l: its kept blocks, zeros after them. */
  private static void copy(INDArray src, INDArray dst, PackedLayout l) {
    if (l == null || src.length() == dst.length()) {
      dst.assign(src);
      return;
    }
    int b = l.blockSize();
    dst.assign(0);
    PackedBlockLinear.leadingBlocks(dst, l.keptBlocks(), b)
        .assign(PackedBlockLinear.leadingBlocks(src, l.keptBlocks(), b));
  }
}
