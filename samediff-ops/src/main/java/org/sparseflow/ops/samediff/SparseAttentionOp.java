package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
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
 * SameDiff op {@value #OP_NAME}: causal block-sparse attention ({@link SparseAttention}). Inputs:
 * q, k, v {@code [batch, heads, T, headDim]}. Outputs: 0 = attention output {@code [B,H,T,D]}, 1 =
 * per-row log-sum-exp {@code [B,H,T]} (kept for the backward pass; it has no gradient, do not use
 * it in a loss). Pattern, block size and scale are integer arguments (see {@link
 * SparseAttentionOpConfig}), so they survive {@code sd.save()} / {@code SameDiff.load()}. Gradient:
 * {@link SparseAttentionBpOp}. Build it with {@link SparseAttentionOps#sparseAttention}.
 */
@AutoService(JavaKernelOp.class)
public class SparseAttentionOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_sparse_attention";
  private static final Spec SPEC = new Spec(OP_NAME, 2);

  static {
    SparseFlowOps.registerAll();
  }

  public SparseAttentionOp() {}

  public SparseAttentionOp(
      SameDiff sd,
      SDVariable q,
      SDVariable k,
      SDVariable v,
      AttentionPattern pattern,
      int blockSize,
      double scale) {
    super(sd, new SDVariable[] {q, k, v});
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

  @Override
  protected Spec spec() {
    return SPEC;
  }

  SparseAttentionOpConfig config() {
    return SparseAttentionOpConfig.fromIArgs(iArgs(), OP_NAME);
  }

  /** The attention pattern of this op. */
  public AttentionPattern pattern() {
    return config().pattern;
  }

  public int blockSize() {
    return config().blockSize;
  }

  public double scale() {
    return config().scale;
  }

  @Override
  public Map<String, Object> propertiesForFunction() {
    return config().properties();
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    checkInputs(inputs, 3, OP_NAME);
    INDArray q = inputs.get(0);
    return list(
        shapeOf(q.shape(), q.dataType()),
        shapeOf(new long[] {q.size(0), q.size(1), q.size(2)}, q.dataType()));
  }

  static void checkInputs(List<INDArray> inputs, int n, String opName) {
    if (inputs == null || inputs.size() != n) {
      throw new IllegalArgumentException(
          opName + " expects " + n + " inputs; got " + (inputs == null ? "null" : inputs.size()));
    }
    for (int i = 0; i < n; i++) {
      INDArray a = inputs.get(i);
      if (a == null || a.rank() != 4) {
        throw new IllegalArgumentException(
            opName
                + " input "
                + i
                + " shape="
                + (a == null ? "null" : Arrays.toString(a.shape()))
                + "; expected rank 4 [batch, heads, T, headDim]");
      }
    }
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    SparseAttentionOpConfig c = config();
    INDArray q = inputs.get(0);
    BlockLayout layout = c.layout((int) q.size(2), (int) q.size(1));
    SparseAttention.forwardInto(
        q, inputs.get(1), inputs.get(2), layout, c.scale, outputs.get(0), outputs.get(1));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    SDVariable[] a = args();
    SDVariable[] outs = outputVariables();
    SparseAttentionOpConfig c = config();
    SDVariable[] g =
        new SparseAttentionBpOp(
                sameDiff,
                a[0],
                a[1],
                a[2],
                outs[0],
                outs[1],
                grads.get(0),
                c.pattern,
                c.blockSize,
                c.scale)
            .outputVariables();
    return Arrays.asList(g);
  }
}
