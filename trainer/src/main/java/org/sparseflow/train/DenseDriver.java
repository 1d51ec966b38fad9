package org.sparseflow.train;

/**
 * The dense baseline: density 1. FLOPs of the reference GPTs by MST's FLOP model at density 1
 * ({@link GptFlops}); of other models by the standard estimate of 6 N tokens per training step (2 N
 * forward + 4 N backward per token for N weights; Kaplan et al. 2020, arXiv 2001.08361), plus the
 * causal attention score and value matmuls 6 * 2 * T^2 * d per layer and sequence when the model's
 * shape is known. Used when no sparsity is configured and no exact FLOP counter is available.
 */
public class DenseDriver implements SparsityDriver {

  private double flopsPerStep;

  @Override
  public String description() {
    return "dense";
  }

  private boolean exact;

  @Override
  public void attach(TrainableModel model, TrainConfig config) {
    var gpt = GptFlops.architecture(config, model.vocabSize());
    if (gpt != null) {
      // same formulas as the MST FLOP counter, at density 1
      flopsPerStep = GptFlops.counter(gpt, config.batchSize).denseStepFlops();
      exact = true;
    } else {
      double tokens = (double) config.batchSize * config.contextLength;
      flopsPerStep = 6.0 * model.parameterCount() * tokens;
    }
  }

  @Override
  public double density() {
    return 1.0;
  }

  @Override
  public double stepFlops(long step) {
    return flopsPerStep;
  }

  @Override
  public boolean flopsAreEstimate() {
    return !exact;
  }
}
