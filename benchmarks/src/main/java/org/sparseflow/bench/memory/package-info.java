/**
 * The {@code memory} suite (issue 23): parameter, gradient, optimizer-state, checkpoint and peak
 * off-heap bytes of the DL4J ComputationGraph GPT, dense and with block-sparse MLP and
 * attention-projection weights in masked or packed storage.
 */
package org.sparseflow.bench.memory;
