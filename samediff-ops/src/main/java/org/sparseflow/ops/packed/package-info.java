/**
 * Packed block-sparse storage (issue 23, memory proportional to density): the values of the kept b
 * x b blocks of a weight W [rows, cols] in one block-major array, the {@link
 * org.sparseflow.ops.packed.PackedLayout} that says which blocks are kept, and the linear forward
 * and backward passes that read and write the packed values directly, without a dense [rows, cols]
 * array.
 */
package org.sparseflow.ops.packed;
