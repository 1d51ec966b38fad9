/**
 * The configuration switch {@link org.sparseflow.layers.sparsify.Sparsify}: makes a DL4J or
 * SameDiff model sparse according to a {@code SparsityConfig} (planning which layers to replace,
 * choosing per-layer densities, moving trained parameters) and reports what it did.
 */
package org.sparseflow.layers.sparsify;
