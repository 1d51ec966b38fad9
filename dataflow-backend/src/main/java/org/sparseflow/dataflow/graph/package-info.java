/**
 * The framework-free op graph the simulator works on: ops, tensors, data types, training phases and
 * sparsity annotations.
 */
package org.sparseflow.dataflow.graph;
