/**
 * JDK Vector API helpers that give the same bits interpreted and JIT-compiled (an exponential and a
 * lane sum), so that training with the vector kernels is bit-reproducible across an interrupt and
 * resume.
 */
package org.sparseflow.ops.vector;
