package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * Forward-pass state a layer keeps for the backward pass of the same training iteration, so that
 * backprop does not run the forward pass a second time (DL4J's {@code BaseLayer} recomputes it; for
 * the attention layer that is four projections plus the attention kernel).
 *
 * <p>Safety: the state is allocated in the ACTIVATIONS workspace, which DL4J keeps open from the
 * training forward pass until backprop has finished (the layer inputs live there too). It is keyed
 * by the identity of the layer's input array and used at most once: a backward pass over another
 * input, a second backward pass, or any forward pass in between finds no entry and recomputes.
 */
final class ForwardCache<T> {
  private INDArray key;
  private T value;

  /**
   * Makes the ACTIVATIONS workspace current for the forward pass of a training iteration, or
   * returns null when there is nothing to cache into (inference, or the workspace is not open):
   * then nothing may be cached.
   */
  static MemoryWorkspace openActivations(boolean training, LayerWorkspaceMgr mgr) {
    if (!training || mgr == null) {
      return null;
    }
    if (!mgr.isScopedOut(ArrayType.ACTIVATIONS) && !mgr.isWorkspaceOpen(ArrayType.ACTIVATIONS)) {
      return null;
    }
    return mgr.notifyScopeBorrowed(ArrayType.ACTIVATIONS);
  }

  void put(INDArray input, T state) {
    key = input;
    value = state;
  }

  /** The state stored for this exact input array, removed; null if none. */
  T take(INDArray input) {
    T v = key == input && input != null ? value : null;
    clear();
    return v;
  }

  void clear() {
    key = null;
    value = null;
  }
}
