/**
 * Fused element-wise and row kernels shared by the DL4J layers and the fused SameDiff ops: layer
 * normalisation over the last axis (forward and one-pass backward) and GELU's backward pass, over
 * Java arrays, with the copies to and from ND4J buffers in {@link HostArrays}.
 */
package org.sparseflow.ops.fused;
