package org.sparseflow.ops.packed;

/**
 * The dimensions a packed layout gives its INDArray entry points: the dense weight [rows, cols] it
 * stands for and the length and row-major shape of its packed value array. {@link PackedOperands}
 * checks operands against it for both {@link PackedBlockLinear} and {@link PackedNmLinear}.
 */
interface PackedShape {
  /** Rows of the dense weight. */
  long rows();

  /** Columns of the dense weight. */
  long cols();

  /** Number of packed values. */
  long packedLength();

  /** Row-major shape of the packed value matrix. */
  long[] packedShape();
}
