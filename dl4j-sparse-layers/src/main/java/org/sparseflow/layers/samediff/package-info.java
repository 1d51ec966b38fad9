/**
 * Sparsification of SameDiff graphs in place: matmuls with selected weights become sparse matmuls,
 * the causal attention subgraph becomes one sparse attention op, layer norms and GELUs become fused
 * ops (the config's {@code fuse} section), and {@code densify} turns all of them back into stock
 * ops.
 */
package org.sparseflow.layers.samediff;
