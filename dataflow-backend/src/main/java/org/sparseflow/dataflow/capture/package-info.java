/**
 * Turns a model into an op graph: from a recorded trace, from a SameDiff graph, or analytically
 * from a GPT shape.
 */
package org.sparseflow.dataflow.capture;
