package org.sparseflow.dataflow.sim;

/**
 * Simulated time of one section (dataflow chip) or one kernel (GPU), per execution. The section
 * runs {@code repeats} times per step (once per micro-batch for forward/backward, once for the
 * optimizer). All times in seconds. SIMULATED.
 */
public record SectionTiming(
    int index,
    String name,
    String phase,
    int kernels,
    int ops,
    int stages,
    int splitFactor,
    int repeats,
    double flops,
    double computeS,
    double networkS,
    double offChipS,
    double setupS,
    double fillDrainS,
    double switchS,
    double totalS,
    String bound,
    double utilisation,
    double onChipBytes,
    int memoryUnits,
    int computeUnits,
    double offChipBytes) {}
