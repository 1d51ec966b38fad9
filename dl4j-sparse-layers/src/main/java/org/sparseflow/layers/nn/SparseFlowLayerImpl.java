package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.layers.BaseLayer;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * The DL4J layer side shared by the implementations of the {@link SparseFlowFeedForwardLayer}
 * configurations: no pretraining, a bias as configured, and for layers with masked weights ({@link
 * SparseWeightLayer}) the masks re-applied after DL4J's weight constraints.
 *
 * @param <C> the layer configuration
 */
abstract class SparseFlowLayerImpl<C extends SparseFlowFeedForwardLayer> extends BaseLayer<C> {
  private static final long serialVersionUID = 1L;

  SparseFlowLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  /** Starts a forward pass: checks that the input is set and applies dropout to it. */
  void startForward(boolean training, LayerWorkspaceMgr mgr) {
    assertInputSet(false);
    applyDropOutIfNecessary(training, mgr);
  }

  @Override
  public void applyConstraints(int iteration, int epoch) {
    super.applyConstraints(iteration, epoch);
    if (this instanceof SparseWeightLayer masked) {
      masked.applyMasks();
    }
  }

  @Override
  public boolean isPretrainLayer() {
    return false;
  }

  @Override
  public boolean hasBias() {
    return layerConf().hasBias();
  }
}
