package org.sparseflow.layers.api;

import java.util.ArrayList;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.api.Trainable;
import org.deeplearning4j.nn.api.Updater;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.updater.BaseMultiLayerUpdater;
import org.deeplearning4j.nn.updater.UpdaterBlock;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * The project's one way to reach the optimizer state of a single DL4J parameter: live views of its
 * slices of the network updater's state (Adam: m then v; Nesterovs: v; Sgd: none).
 */
public final class UpdaterStates {
  private UpdaterStates() {}

  /**
   * Live views of the optimizer state of param {@code key} of {@code layer}, each shaped and
   * ordered like {@code param}.
   *
   * @param layer the model's layer that owns the param (a wrapper such as TimeDistributed stays the
   *     wrapper: the updater knows the param by it)
   * @param create whether to create the network's updater when it does not exist yet; when false
   *     and there is none, the list is empty
   */
  public static List<INDArray> views(
      Model model, Layer layer, String key, INDArray param, boolean create) {
    Updater u;
    if (model instanceof MultiLayerNetwork) {
      u = ((MultiLayerNetwork) model).getUpdater(create);
    } else if (model instanceof ComputationGraph) {
      u = ((ComputationGraph) model).getUpdater(create);
    } else {
      throw new IllegalArgumentException(
          "model = "
              + (model == null ? "null" : model.getClass().getName())
              + " is not supported; allowed: MultiLayerNetwork, ComputationGraph");
    }
    List<INDArray> out = new ArrayList<>();
    if (!(u instanceof BaseMultiLayerUpdater)) {
      return out;
    }
    boolean graph = model instanceof ComputationGraph;
    for (UpdaterBlock b : ((BaseMultiLayerUpdater<?>) u).getUpdaterBlocks()) {
      INDArray view = b.getUpdaterView();
      if (view == null || view.length() == 0) {
        continue;
      }
      long blockLen = (long) b.getParamOffsetEnd() - b.getParamOffsetStart();
      for (UpdaterBlock.ParamState ps : b.getLayersAndVariablesInBlock()) {
        if (!sameLayer(ps.getLayer(), layer, graph) || !key.equals(ps.getParamName())) {
          continue;
        }
        long off = (long) ps.getParamOffsetStart() - b.getParamOffsetStart();
        long len = (long) ps.getParamOffsetEnd() - ps.getParamOffsetStart();
        INDArray flat = view.reshape(view.length());
        // the block's state is [state_0 | state_1 | ...], each laid out like the block's flat
        // params, whose order is the param view's order
        for (long k = 0; k < view.length() / blockLen; k++) {
          long start = k * blockLen + off;
          out.add(
              flat.get(NDArrayIndex.interval(start, start + len))
                  .reshape(param.ordering(), param.shape()));
        }
      }
    }
    return out;
  }

  private static boolean sameLayer(Trainable t, Layer layer, boolean graph) {
    if (t == layer) {
      return true;
    }
    // a graph's updater may hold another instance of the vertex's layer: match by name
    String a = t.getConfig() == null ? null : t.getConfig().getLayerName();
    String b = layer.conf().getLayer().getLayerName();
    return graph && a != null && a.equals(b);
  }
}
