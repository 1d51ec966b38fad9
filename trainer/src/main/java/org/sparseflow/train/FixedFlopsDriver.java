package org.sparseflow.train;

import org.sparseflow.mst.core.FlopCounter;

/**
 * A driver whose FLOPs per step are fixed once it is attached: the reference GPTs by MST's FLOP
 * model at the driver's weight densities ({@link GptFlops}), other models by the standard estimate
 * of 6 N d tokens per training step (2 N forward + 4 N backward per token for N weights at density
 * d; Kaplan et al. 2020, arXiv 2001.08361).
 */
abstract class FixedFlopsDriver implements SparsityDriver {
  private double flopsPerStep;
  private boolean exact;

  /** FLOPs of one training step of a reference GPT, given its FLOP counter. */
  abstract double gptStepFlops(FlopCounter counter);

  @Override
  public void attach(TrainableModel model, TrainConfig config) {
    var gpt = GptFlops.architecture(config, model.vocabSize());
    if (gpt != null) {
      flopsPerStep = gptStepFlops(GptFlops.counter(gpt, config.batchSize));
      exact = true;
    } else {
      flopsPerStep =
          6.0 * model.parameterCount() * density() * config.batchSize * config.contextLength;
    }
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
