package org.sparseflow.layers.nn;

/**
 * The masked-weight options a {@link MaskedWeightBuilder} collects: pattern, density, storage and
 * the packed block layout with its seed.
 */
final class MaskedWeightOptions {
  String pattern = "unstructured";
  double density = 1.0;
  String storage = PackedStorage.MASKED;
  int[] blockLayout;
  long layoutSeed = 12345L;

  /** The collected options as the fields of the layer configuration being built. */
  MaskedWeightSettings settings() {
    return new MaskedWeightSettings(pattern, density, storage, blockLayout);
  }

  /**
   * Checks the sparsity of a [nIn, nOut] weight and fills in the packed block layout (a seeded
   * random one when none was given); called by the builders' {@code build()}.
   */
  void resolve(String layerName, long nIn, long nOut) {
    LayerValidation.checkWeightSparsity(layerName, pattern, density, nIn, nOut);
    blockLayout =
        PackedStorage.resolve(
            layerName, storage, pattern, density, nIn, nOut, blockLayout, layoutSeed);
  }
}
