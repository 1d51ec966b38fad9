/**
 * Reports of an MST run: the JSONL log of update records and the JFreeChart plots (sparsity
 * schedule, per-layer density heat map, loss against FLOPs).
 */
package org.sparseflow.mst.report;
