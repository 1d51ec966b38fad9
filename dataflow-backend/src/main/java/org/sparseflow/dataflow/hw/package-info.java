/**
 * Hardware descriptions (dataflow chips and GPUs) read from JSON files, each figure with its public
 * source.
 */
package org.sparseflow.dataflow.hw;
