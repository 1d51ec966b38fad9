/**
 * SameDiff custom ops ({@code sparseflow_sparse_matmul}, {@code sparseflow_sparse_attention} and
 * their backward ops), registered through ServiceLoader, and the ND4J CPU backend and op
 * executioner that run their Java kernels.
 */
package org.sparseflow.ops.samediff;
