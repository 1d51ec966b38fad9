package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;

/**
 * Backward of {@link SparseAttentionOp}, op {@value #OP_NAME}. Inputs: q, k, v, out, lse, dOut.
 * Outputs: dq, dk, dv. Same integer arguments as the forward op.
 */
@AutoService(JavaKernelOp.class)
public class SparseAttentionBpOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_sparse_attention_bp";
  private static final Spec SPEC = new Spec(OP_NAME, 3);

  static {
    SparseFlowOps.registerAll();
  }

  public SparseAttentionBpOp() {}

  public SparseAttentionBpOp(
      SameDiff sd,
      SDVariable q,
      SDVariable k,
      SDVariable v,
      SDVariable out,
      SDVariable lse,
      SDVariable dOut,
      AttentionPattern pattern,
      int blockSize,
      double scale) {
    super(sd, new SDVariable[] {q, k, v, out, lse, dOut});
    addIArgument(new SparseAttentionOpConfig(pattern, blockSize, scale).toIArgs());
  }

  /**
   * Switches this op to another attention pattern for the following executions (same block size and
   * scale); used by hybrid sparse attention schedules. The pattern is stored in the iArgs, so it is
   * saved with the graph.
   */
  public void setPattern(AttentionPattern pattern) {
    SparseAttentionOpConfig c = SparseAttentionOpConfig.fromIArgs(iArgs(), OP_NAME);
    replaceIArgs(new SparseAttentionOpConfig(pattern, c.blockSize, c.scale).toIArgs());
  }

  /** The attention pattern of this op. */
  public AttentionPattern pattern() {
    return SparseAttentionOpConfig.fromIArgs(iArgs(), OP_NAME).pattern;
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  @Override
  public Map<String, Object> propertiesForFunction() {
    return SparseAttentionOpConfig.fromIArgs(iArgs(), OP_NAME).properties();
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    if (inputs == null || inputs.size() != 6) {
      throw new IllegalArgumentException(
          OP_NAME
              + " expects 6 inputs (q, k, v, out, lse, dOut); got "
              + (inputs == null ? "null" : inputs.size()));
    }
    SparseAttentionOp.checkInputs(inputs.subList(0, 3), 3, OP_NAME);
    INDArray q = inputs.get(0);
    return list(
        shapeOf(q.shape(), q.dataType()),
        shapeOf(q.shape(), q.dataType()),
        shapeOf(q.shape(), q.dataType()));
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    SparseAttentionOpConfig c = SparseAttentionOpConfig.fromIArgs(iArgs(), OP_NAME);
    INDArray q = inputs.get(0);
    BlockLayout layout = c.layout((int) q.size(2), (int) q.size(1));
    SparseAttention.backwardInto(
        q,
        inputs.get(1),
        inputs.get(2),
        inputs.get(3),
        inputs.get(4),
        inputs.get(5),
        layout,
        c.scale,
        outputs.get(0),
        outputs.get(1),
        outputs.get(2));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    throw new UnsupportedOperationException(
        OP_NAME + " has no gradient (second derivatives are not supported)");
  }
}
