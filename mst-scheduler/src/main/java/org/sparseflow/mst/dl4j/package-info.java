/**
 * What MST needs from a DL4J MultiLayerNetwork or ComputationGraph: the selected weights of
 * SparseFlow layers (through dl4j-sparse-layers' {@code layers.api}) and of stock layers, their
 * gradients and their optimizer state.
 */
package org.sparseflow.mst.dl4j;
