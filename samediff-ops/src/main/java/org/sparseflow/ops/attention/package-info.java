/**
 * Causal block-sparse attention: attention patterns (local, strided, fixed, global, random), their
 * block layouts, the forward and backward kernels, and the dense masked fallback used where no
 * kernel exists (for example on CUDA).
 */
package org.sparseflow.ops.attention;
