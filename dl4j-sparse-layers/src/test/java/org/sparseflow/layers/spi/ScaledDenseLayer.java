package org.sparseflow.layers.spi;

import org.deeplearning4j.nn.conf.layers.DenseLayer;

/** A "third-party" layer type no built-in sparsifier knows (built-ins match DenseLayer exactly). */
public class ScaledDenseLayer extends DenseLayer {
  private static final long serialVersionUID = 1L;

  public ScaledDenseLayer() {}
}
