/**
 * Sparsification of SameDiff graphs in place: matmuls with selected weights become sparse matmuls,
 * the causal attention subgraph becomes one sparse attention op, and {@code densify} turns both
 * back into stock ops.
 */
package org.sparseflow.layers.samediff;
