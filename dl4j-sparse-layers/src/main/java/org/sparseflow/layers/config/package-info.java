/**
 * The sparsity configuration of a model ({@code SparsityConfig}, read from YAML/JSON with ND4J's
 * shaded Jackson) and its framework-free vocabulary: density distributions, initial masks and
 * attention settings.
 */
package org.sparseflow.layers.config;
