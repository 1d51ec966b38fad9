/**
 * Sparsity patterns and masks: unstructured (element), b x b block and N:M masks, built from scores
 * or at random, and the pattern names that configuration files use.
 */
package org.sparseflow.ops.pattern;
