/**
 * The kernel suite (measured, not simulated): block-sparse matmul and sparse attention kernels
 * against ND4J's dense operations on the same machine.
 */
package org.sparseflow.bench.ops;
