/**
 * The framework-free MST engine (no ND4J or DL4J types): sparsity schedules, per-layer density
 * allocation, masks and topology updates, attention schedules, reset bias correction, the FLOP
 * ledger, the configuration and the saved state. Weights and gradients are row-major float arrays.
 */
package org.sparseflow.mst.core;
