/**
 * Parallel GPU training model (tensor, pipeline and data parallelism with activation recompute and
 * communication) and its validation against published measured throughputs (Megatron-LM, SC21).
 * Every number it produces is SIMULATED.
 */
package org.sparseflow.dataflow.cluster;
