package org.sparseflow.examples.train;

/**
 * The dense baseline: density 1, FLOPs by the standard estimate of 6 N tokens per training step
 * (2 N forward + 4 N backward per token for N weights; Kaplan et al. 2020, arXiv 2001.08361), plus the
 * causal attention score and value matmuls 6 * 2 * T^2 * d per layer and sequence when the model's shape
 * is known. Used when no sparsity is configured and no exact FLOP counter is available.
 */
public class DenseDriver implements SparsityDriver {

    private double flopsPerStep;

    @Override
    public String description() {
        return "dense";
    }

    @Override
    public void attach(TrainableModel model, TrainConfig config) {
        double tokens = (double) config.batchSize * config.contextLength;
        flopsPerStep = 6.0 * model.parameterCount() * tokens;
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
        return true;
    }
}
