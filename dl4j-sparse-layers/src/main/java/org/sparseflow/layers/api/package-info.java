/**
 * Model-level access to masked weights: {@link org.sparseflow.layers.api.SparseParams#find} lists
 * every {@link org.sparseflow.layers.api.SparseParam} of a MultiLayerNetwork or ComputationGraph
 * ("0_W", "attn1_Wq"); each gives live views of its weight and mask, replaces masks while zeroing
 * the optimizer state where the mask changed, and exposes the raw (optionally dense) weight
 * gradient for regrowth criteria.
 */
package org.sparseflow.layers.api;
