package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.nd4j.linalg.activations.impl.ActivationIdentity;

/**
 * Builder base of the SparseFlow layers that take recurrent input ({@link
 * CausalSelfAttentionLayer}, {@link LayerNormLayer}): identity activation unless set otherwise, and
 * the recurrent data format, checked when set.
 *
 * @param <T> the concrete builder
 */
abstract class RecurrentLayerBuilder<T extends RecurrentLayerBuilder<T>>
    extends FeedForwardLayer.Builder<T> {
  RNNFormat dataFormat = RNNFormat.NCW;

  RecurrentLayerBuilder() {
    this.activationFn = new ActivationIdentity();
  }

  /** Layout of input and output: NCW [minibatch, n, T] (default) or NWC [minibatch, T, n]. */
  public T dataFormat(RNNFormat dataFormat) {
    this.dataFormat = LayerValidation.checkDataFormat(layerName, dataFormat);
    return self();
  }

  // T is the concrete builder by the class declaration's bound
  @SuppressWarnings("unchecked")
  private T self() {
    return (T) this;
  }
}
