package org.sparseflow.layers.sparsify;

/** A model returned by {@link Sparsify} together with the report of what was done. */
public record Sparsified<T>(T model, SparsifyReport report) {}
