package org.sparseflow.dataflow.graph;

import java.util.Arrays;

/**
 * A tensor of the op graph. Sparse weights (and their gradients and optimizer state) are stored
 * compressed: only kept elements plus index metadata count towards {@link #bytes()}.
 */
public final class Tensor {
  private final int id;
  private final String name;
  private final long[] shape;
  private final DType dtype;
  private final TensorKind kind;
  private final SparsityInfo sparsity;

  Tensor(int id, String name, long[] shape, DType dtype, TensorKind kind, SparsityInfo sparsity) {
    this.id = id;
    this.name = name;
    this.shape = shape.clone();
    this.dtype = dtype;
    this.kind = kind;
    this.sparsity = sparsity == null ? SparsityInfo.DENSE : sparsity;
    for (long d : shape) {
      if (d < 0) {
        throw new IllegalArgumentException(
            "shape of tensor '" + name + "' has a negative dimension: " + Arrays.toString(shape));
      }
    }
  }

  public int id() {
    return id;
  }

  public String name() {
    return name;
  }

  public long[] shape() {
    return shape.clone();
  }

  public DType dtype() {
    return dtype;
  }

  public TensorKind kind() {
    return kind;
  }

  public SparsityInfo sparsity() {
    return sparsity;
  }

  public long elements() {
    long n = 1;
    for (long d : shape) {
      n *= d;
    }
    return n;
  }

  /** Stored bytes: dense size, or kept elements plus index metadata for a sparse tensor. */
  public double bytes() {
    double e = elements();
    if (!sparsity.isSparse()) {
      return e * dtype.bytes();
    }
    double nnz = e * sparsity.density();
    return nnz * (dtype.bytes() + sparsity.indexBytesPerNonZero());
  }

  @Override
  public String toString() {
    return name
        + Arrays.toString(shape)
        + ":"
        + dtype
        + (sparsity.isSparse() ? "@" + sparsity.density() : "");
  }
}
