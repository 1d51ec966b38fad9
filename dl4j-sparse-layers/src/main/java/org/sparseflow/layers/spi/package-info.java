/**
 * The service-provider interface through which {@code Sparsify} replaces layer configurations: one
 * {@link org.sparseflow.layers.spi.LayerSparsifier} per supported DL4J layer type, found with
 * {@code java.util.ServiceLoader}.
 */
package org.sparseflow.layers.spi;
