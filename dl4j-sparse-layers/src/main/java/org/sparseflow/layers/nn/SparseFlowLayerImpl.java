package org.sparseflow.layers.nn;

import java.util.function.Function;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.layers.BaseLayer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;

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

  /**
   * An {@code activate} that keeps its forward state for backprop (see {@link ForwardCache}):
   * clears {@code cache}, starts the forward pass (before the borrowed scope: dropout borrows the
   * same workspace), runs {@code body} with the ACTIVATIONS workspace of a training pass current
   * (its argument; null when nothing may be cached) and leverages the result to ACTIVATIONS.
   */
  INDArray activateCaching(
      boolean training,
      LayerWorkspaceMgr mgr,
      ForwardCache<?> cache,
      Function<MemoryWorkspace, INDArray> body) {
    cache.clear();
    startForward(training, mgr);
    INDArray out;
    try (MemoryWorkspace ws = ForwardCache.openActivations(training, mgr)) {
      out = body.apply(ws);
    }
    return mgr.leverageTo(ArrayType.ACTIVATIONS, out);
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
