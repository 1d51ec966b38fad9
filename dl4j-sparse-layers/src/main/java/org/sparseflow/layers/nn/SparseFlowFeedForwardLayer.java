package org.sparseflow.layers.nn;

import java.util.Collection;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.ParamInitializer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.memory.LayerMemoryReport;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.regularization.Regularization;

/**
 * The DL4J side shared by the feed-forward SparseFlow layer configurations ({@link
 * SparseDenseLayer}, {@link CausalSelfAttentionLayer}, {@link LayerNormLayer}): params laid out by
 * {@link SparseFlowParamInitializer} from {@link #paramSpecs()}, frozen masks (no updates, no
 * regularization) and the wiring of a new implementation. It declares no fields, so the layers'
 * JSON is exactly their own fields plus DL4J's. ({@link SparseOutputLayer} extends DL4J's
 * BaseOutputLayer instead and uses {@link LayerConfSupport} directly.)
 */
abstract class SparseFlowFeedForwardLayer extends FeedForwardLayer implements SparseFlowLayerConf {
  private static final long serialVersionUID = 1L;

  /** Jackson. */
  SparseFlowFeedForwardLayer() {}

  SparseFlowFeedForwardLayer(FeedForwardLayer.Builder<?> b) {
    super(b);
  }

  /**
   * Validates the configuration where needed and creates the (not yet wired) implementation; called
   * by {@link #instantiate}.
   */
  abstract Layer newImplementation(NeuralNetConfiguration conf, DataType dataType);

  /** Whether the layer has bias params. */
  public abstract boolean hasBias();

  @Override
  public Layer instantiate(
      NeuralNetConfiguration conf,
      Collection<TrainingListener> listeners,
      int layerIndex,
      INDArray paramsView,
      boolean initializeParams,
      DataType dataType) {
    return LayerConfSupport.instantiate(
        newImplementation(conf, dataType),
        initializer(),
        conf,
        listeners,
        layerIndex,
        paramsView,
        initializeParams);
  }

  @Override
  public ParamInitializer initializer() {
    return SparseFlowParamInitializer.getInstance();
  }

  @Override
  public IUpdater getUpdaterByParam(String paramName) {
    return LayerConfSupport.updater(this, paramName, super::getUpdaterByParam);
  }

  @Override
  public List<Regularization> getRegularizationByParam(String paramName) {
    return LayerConfSupport.regularization(this, paramName, super::getRegularizationByParam);
  }

  @Override
  public LayerMemoryReport getMemoryReport(InputType inputType) {
    return LayerConfSupport.memoryReport(
        this, getClass(), inputType, initializer().numParams(this));
  }
}
