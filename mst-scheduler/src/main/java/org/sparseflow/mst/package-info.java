/**
 * Mixed Sparsity Training for DL4J and SameDiff models: {@link org.sparseflow.mst.MstListener}
 * drives the framework-free {@link org.sparseflow.mst.core.MstCore} from either framework's
 * training loop (one adapter per framework, one shared update scaler), and {@link
 * org.sparseflow.mst.MstCheckpoint} saves and resumes its state.
 */
package org.sparseflow.mst;
