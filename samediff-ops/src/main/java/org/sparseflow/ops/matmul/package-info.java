/**
 * Block-sparse and masked matrix multiplication: forward, input gradient and kept-block weight
 * gradient (plus dense weight gradient on request) over a sparse mask.
 */
package org.sparseflow.ops.matmul;
