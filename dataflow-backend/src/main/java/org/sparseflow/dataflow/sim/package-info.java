/**
 * The analytical simulators: a spatial dataflow chip (fused sections or kernel by kernel) and a
 * roofline GPU baseline.
 */
package org.sparseflow.dataflow.sim;
