/**
 * How SparseFlow attaches to ND4J without choosing a backend for the user: the registered {@link
 * org.sparseflow.ops.backend.SparseFlowBackend} (which links only against nd4j-api and delegates to
 * the native CPU backend when nd4j-native is on the classpath), the switch that turns it off, and
 * {@link org.sparseflow.ops.backend.Backends}, the single guard every "is this the native CPU
 * backend" check goes through.
 */
package org.sparseflow.ops.backend;
