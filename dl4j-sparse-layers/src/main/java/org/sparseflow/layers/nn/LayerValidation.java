package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.conf.RNNFormat;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Checks of layer configuration fields; each failure names the layer, field, value and what is
 * allowed.
 */
final class LayerValidation {
  private LayerValidation() {}

  static String where(String layerName) {
    return layerName == null ? "" : "layer '" + layerName + "': ";
  }

  /** pattern must parse, density in (0, 1], and (when known) nIn/nOut must fit the pattern. */
  static void checkWeightSparsity(
      String layerName, String pattern, double density, long nIn, long nOut) {
    PatternSpec p;
    try {
      SparseKernels.checkDensity("density", density);
      p = SparseKernels.parsePattern("pattern", pattern);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where(layerName) + e.getMessage(), e);
    }
    if (nIn > 0 && nOut > 0) {
      SparseKernels.checkShape(layerName, p, nIn, nOut, "nIn", "nOut");
    }
  }

  /** The recurrent layout a layer builder was given; null is rejected naming the layer. */
  static RNNFormat checkDataFormat(String layerName, RNNFormat dataFormat) {
    if (dataFormat == null) {
      throw new IllegalArgumentException(
          where(layerName) + "dataFormat = null is not allowed; allowed: NCW, NWC");
    }
    return dataFormat;
  }

  static void checkPositive(String layerName, String field, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(
          where(layerName) + field + " = " + value + " is not allowed; allowed: > 0");
    }
  }
}
