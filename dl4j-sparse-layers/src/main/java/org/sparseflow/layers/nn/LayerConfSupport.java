package org.sparseflow.layers.nn;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.deeplearning4j.nn.api.ParamInitializer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.memory.LayerMemoryReport;
import org.deeplearning4j.nn.conf.memory.MemoryReport;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.Regularization;

/** Shared pieces of the SparseFlow layer configurations. */
final class LayerConfSupport {
  private LayerConfSupport() {}

  /** Masks are frozen: Sgd(0) (NoOp would apply the raw gradient with learning rate 1 in DL4J). */
  static final IUpdater FROZEN = new Sgd(0.0);

  static boolean isMask(SparseFlowLayerConf conf, String param) {
    for (ParamSpec p : conf.paramSpecs()) {
      if (p.key().equals(param)) {
        return p.role() == ParamSpec.Role.MASK;
      }
    }
    return false;
  }

  /** Wires a new layer implementation to its configuration, listeners and params view. */
  // qualified: the imported Layer is the configuration layer
  static org.deeplearning4j.nn.api.Layer instantiate(
      org.deeplearning4j.nn.api.Layer impl,
      ParamInitializer initializer,
      NeuralNetConfiguration conf,
      Collection<TrainingListener> listeners,
      int layerIndex,
      INDArray paramsView,
      boolean initializeParams) {
    impl.setListeners(listeners);
    impl.setIndex(layerIndex);
    impl.setParamsViewArray(paramsView);
    Map<String, INDArray> table = initializer.init(conf, paramsView, initializeParams);
    impl.setParamTable(table);
    impl.setConf(conf);
    return impl;
  }

  /** The updater of a param: {@link #FROZEN} for a mask, else the configured one. */
  static IUpdater updater(
      SparseFlowLayerConf conf, String param, Function<String, IUpdater> configured) {
    return isMask(conf, param) ? FROZEN : configured.apply(param);
  }

  /** The regularization of a param: none for a mask, else the configured one. */
  static List<Regularization> regularization(
      SparseFlowLayerConf conf, String param, Function<String, List<Regularization>> configured) {
    return isMask(conf, param) ? Collections.emptyList() : configured.apply(param);
  }

  static LayerMemoryReport memoryReport(
      Layer layer, Class<? extends Layer> cls, InputType in, long numParams) {
    InputType out = layer.getOutputType(-1, in);
    return new LayerMemoryReport.Builder(layer.getLayerName(), cls, in, out)
        .standardMemory(numParams, 0)
        .workingMemory(0, 0, 0, 0)
        .cacheMemory(MemoryReport.CACHE_MODE_ALL_ZEROS, MemoryReport.CACHE_MODE_ALL_ZEROS)
        .build();
  }
}
