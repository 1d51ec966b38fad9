/**
 * Native-memory access shared by the kernels: raw addresses of ND4J buffers and the pointer views
 * that BLAS calls take.
 */
package org.sparseflow.ops;
