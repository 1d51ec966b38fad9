package org.sparseflow.dataflow.compile;

/**
 * On-chip footprint and traffic of a set of ops mapped together (one section), per micro-batch.
 * Capacity fields (resident, buffers, memory units, stages) are per split part; traffic fields are
 * totals over all parts.
 */
public record Footprint(
    /** Weights, weight-gradient accumulators and whole second matmul operands held on chip. */
    double residentBytes,
    /**
     * Stream buffers (bufferDepth tiles per on-chip edge, double-buffered tiles per off-chip edge).
     */
    double bufferBytes,
    /** Memory units needed (each tensor rounded up to whole units). */
    int memoryUnits,
    /** Stages that need a compute unit (ops that are not pure layout changes). */
    int stages,
    /** Activation bytes read from off-chip memory while streaming. */
    double streamInBytes,
    /** Activation bytes written to off-chip memory while streaming. */
    double streamOutBytes,
    /**
     * Weight / optimizer / gradient-accumulator bytes moved before or after streaming (not
     * overlapped).
     */
    double setupBytes,
    /** Bytes moved between stages over the on-chip network. */
    double networkBytes) {

  public double onChipBytes() {
    return residentBytes + bufferBytes;
  }
}
