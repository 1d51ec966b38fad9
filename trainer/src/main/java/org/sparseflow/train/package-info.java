/**
 * Training runs as a library: run directories, atomic checkpoints and exact resume, metrics logs,
 * progress, plots, provenance, and the dense, static-sparse and MST drivers behind {@code train}
 * and {@code compare}.
 */
package org.sparseflow.train;
