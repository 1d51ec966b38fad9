package org.sparseflow.dataflow.graph;

/** Coarse op categories used by fusion rules, placement and both timing models. */
public enum OpKind {
  /** Activation x dense weight matrix (and its dX / dW backward products). */
  LINEAR,
  /** Activation x sparse weight matrix (masked; FLOPs and weight bytes scale with density). */
  SPARSE_LINEAR,
  /** Activation x activation matmul (attention scores and context). */
  BATCHED_MATMUL,
  /** Elementwise arithmetic (add, mul, scale, mask, bias add, residual). */
  ELEMENTWISE,
  /** Elementwise nonlinearity (gelu, relu, tanh, ...). */
  ACTIVATION,
  /** Layer normalisation and similar row-wise normalisations. */
  NORM,
  /** Row-wise softmax (and its backward). */
  SOFTMAX,
  /** Reductions (sum, mean, bias gradient). */
  REDUCTION,
  /** Embedding lookup / scatter-add. */
  GATHER,
  /** Loss (softmax cross-entropy). */
  LOSS,
  /** Parameter update (Adam, SGD). */
  OPTIMIZER,
  /** Reshape, transpose, permute, concat, split: data movement, no arithmetic. */
  LAYOUT,
  /** Anything not classified. Timed as a memory-bound elementwise op. */
  OTHER;

  public boolean isMatmul() {
    return this == LINEAR || this == SPARSE_LINEAR || this == BATCHED_MATMUL;
  }
}
