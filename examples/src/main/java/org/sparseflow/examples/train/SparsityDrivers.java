package org.sparseflow.examples.train;

/**
 * Turns {@code --sparsity} (a preset name or a YAML/JSON file) into a sparsified model and the driver that
 * runs it during training. No sparsity = the dense model and {@link DenseDriver}.
 */
public final class SparsityDrivers {

    /** A sparsified model with its driver. */
    public record Applied(TrainableModel model, SparsityDriver driver) {
    }

    /** A validated sparsity choice, resolved before any model is built so that config errors come first. */
    public interface Resolved {
        /** Sparsifies a freshly built model and returns the driver for a new run. */
        Applied apply(TrainableModel model, TrainConfig config);

        /** The driver for a model restored from a checkpoint (already sparse). */
        SparsityDriver restore(TrainableModel model, TrainConfig config);
    }

    private SparsityDrivers() {
    }

    public static Resolved resolve(TrainConfig config) {
        if (config.sparsity == null || config.sparsity.isBlank() || config.sparsity.equals("dense")) {
            return new Resolved() {
                @Override
                public Applied apply(TrainableModel model, TrainConfig c) {
                    return new Applied(model, new DenseDriver());
                }

                @Override
                public SparsityDriver restore(TrainableModel model, TrainConfig c) {
                    return new DenseDriver();
                }
            };
        }
        throw new IllegalArgumentException("--sparsity: '" + config.sparsity + "' is not available in this build");
    }
}
