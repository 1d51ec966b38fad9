package org.sparseflow.ops.samediff;

import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;

/**
 * A SameDiff custom op (a {@code DynamicCustomOp} with a unique {@code sparseflow_...} opName)
 * whose forward pass runs in Java. {@link SparseFlowOpExecutioner} sends such ops here instead of
 * to libnd4j.
 *
 * <p>Implementations register themselves with {@code @AutoService(JavaKernelOp.class)} and need a
 * public no-arg constructor: {@link SparseFlowOps#registerAll()} puts every one found by {@link
 * java.util.ServiceLoader} into {@code ImportClassMapping.getOpNameMapping()}, which SameDiff's
 * gradient cloning and {@code SameDiff.load} use to re-create ops by name. {@link BaseJavaKernelOp}
 * implements the plumbing.
 */
public interface JavaKernelOp extends CustomOp {

  /** Shapes and types of the outputs for these inputs (in input order). */
  List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs);

  /**
   * Computes the outputs. {@code outputs} are allocated with {@link #calculateOutputShapeJava}
   * shapes and may have any memory order; they must be fully overwritten.
   */
  void execJava(List<INDArray> inputs, List<INDArray> outputs);
}
