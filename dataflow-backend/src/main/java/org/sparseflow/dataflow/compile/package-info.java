/**
 * The dataflow compiler: fuses ops into kernels, splits the graph into sections that fit the chip,
 * and computes their memory footprints.
 */
package org.sparseflow.dataflow.compile;
