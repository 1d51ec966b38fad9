/**
 * DL4J layers of SparseFlow, written against DL4J's classic layer API (FeedForwardLayer config +
 * ParamInitializer + BaseLayer implementation), so they do not inherit the doubled gradients of
 * SameDiffLayer in DL4J 1.0.0-M2.1.
 *
 * <ul>
 *   <li>{@link org.sparseflow.layers.nn.SparseDenseLayer}, {@link
 *       org.sparseflow.layers.nn.SparseOutputLayer}: y = act(x (W o M) + b) through {@code
 *       org.sparseflow.ops.matmul.SparseLinear}. Params "W", "b" and the frozen 0/1 mask "M"
 *       (Sgd(0), no regularization), saved with the model. Gradients are masked, pruned weights are
 *       re-masked after every optimizer step (applyConstraints), so they stay exactly zero.
 *   <li>{@link org.sparseflow.layers.nn.CausalSelfAttentionLayer}: multi-head causal self-attention
 *       on [minibatch, nIn, T] (NCW) or [minibatch, T, nIn] (NWC) with an {@code AttentionPattern}
 *       ("dense", "local:64+strided:64", ...) run by {@code
 *       org.sparseflow.ops.attention.SparseAttention}; optional sparse projections.
 *   <li>{@link org.sparseflow.layers.nn.LayerNormLayer}: the stand-alone layer norm a GPT needs
 *       (NCW or NWC).
 * </ul>
 *
 * Performance: {@code ForwardCache} keeps a training forward pass's state for backprop (DL4J's
 * BaseLayer recomputes the forward pass), {@code GeluKernels} computes GELU's backward pass from
 * the kept output in one loop, and LayerNorm runs as fused loops over contiguous copies. Masked
 * layer implementations implement {@link org.sparseflow.layers.nn.SparseWeightLayer}; tools drive
 * them through {@code org.sparseflow.layers.api.SparseParams}.
 */
package org.sparseflow.layers.nn;
