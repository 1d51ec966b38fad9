package org.sparseflow.dataflow.backend;

import java.util.List;

/**
 * One op executed under the dataflow backend: its name, shapes and data types, buffer identities
 * (to link producers and consumers) and, for SparseFlow ops, the mask density and pattern.
 */
public record RecordedOp(
    int iteration,
    long sequence,
    String opName,
    String category,
    List<long[]> inputShapes,
    List<String> inputTypes,
    List<String> inputIds,
    List<long[]> outputShapes,
    List<String> outputTypes,
    List<String> outputIds,
    double density,
    String pattern) {

  public boolean isSparseFlowOp() {
    return opName.startsWith("sparseflow_");
  }
}
