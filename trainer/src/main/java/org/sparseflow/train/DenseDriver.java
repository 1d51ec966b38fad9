package org.sparseflow.train;

import org.sparseflow.mst.core.FlopCounter;

/**
 * The dense baseline: density 1. FLOPs of the reference GPTs by MST's FLOP model at density 1
 * ({@link GptFlops}); of other models by the standard estimate of 6 N tokens per training step (2 N
 * forward + 4 N backward per token for N weights; Kaplan et al. 2020, arXiv 2001.08361), plus the
 * causal attention score and value matmuls 6 * 2 * T^2 * d per layer and sequence when the model's
 * shape is known. Used when no sparsity is configured and no exact FLOP counter is available.
 */
public class DenseDriver extends FixedFlopsDriver {

  @Override
  public String description() {
    return "dense";
  }

  @Override
  double gptStepFlops(FlopCounter counter) {
    // same formulas as the MST FLOP counter, at density 1
    return counter.denseStepFlops();
  }

  @Override
  public double density() {
    return 1.0;
  }
}
