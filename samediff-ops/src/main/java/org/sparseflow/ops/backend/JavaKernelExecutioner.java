package org.sparseflow.ops.backend;

/**
 * Marker for op executioners that run SparseFlow's Java ops ({@code JavaKernelOp}). Lets {@link
 * Backends#javaKernelsRun()} ask the question without loading the executioner classes, which extend
 * nd4j-native's and cannot be loaded when nd4j-native is absent.
 */
public interface JavaKernelExecutioner {}
