package org.sparseflow.dataflow.sim;

/**
 * Simulated time attributed to one fused kernel (or one op on the GPU), per execution. SIMULATED.
 */
public record KernelTiming(
    int index,
    String name,
    String rule,
    int section,
    int ops,
    int repeats,
    double flops,
    double timeS,
    String bound,
    double utilisation) {}
