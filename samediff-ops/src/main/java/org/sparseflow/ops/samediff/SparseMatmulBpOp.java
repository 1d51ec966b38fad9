package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * Backward of {@link SparseMatmulOp}, op {@value #OP_NAME}. Inputs: x, W, mask, [bias], dy.
 * Outputs: dx, dW (zero outside the mask unless denseWeightGrad), dMask (zeros), [dBias]. iArgs:
 * [blockSize, denseWeightGrad, hasBias].
 */
@AutoService(JavaKernelOp.class)
public class SparseMatmulBpOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_sparse_matmul_bp";
  // 3 outputs without a bias; getNumOutputs() adds the bias gradient when there is one
  private static final Spec SPEC = new Spec(OP_NAME, 3);

  static {
    SparseFlowOps.registerAll();
  }

  public SparseMatmulBpOp() {}

  public SparseMatmulBpOp(
      SameDiff sd,
      SDVariable x,
      SDVariable w,
      SDVariable mask,
      SDVariable bias,
      SDVariable dy,
      int blockSize,
      boolean denseWeightGrad) {
    super(
        sd,
        bias == null ? new SDVariable[] {x, w, mask, dy} : new SDVariable[] {x, w, mask, bias, dy});
    addIArgument(blockSize, denseWeightGrad ? 1 : 0, bias == null ? 0 : 1);
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  private transient BlockMask layout;

  /** Whether dW is dense (every position) or zero outside the mask. */
  public boolean denseWeightGrad() {
    return iArg(1, 0) != 0;
  }

  /**
   * Switches the dense weight gradient on or off for the following executions (RigL-style growth
   * needs it only on the steps that grow).
   */
  public void setDenseWeightGrad(boolean on) {
    setIArg(1, on ? 1 : 0);
  }

  /**
   * As {@link SparseMatmulOp#setBlockLayout}: the mask's block layout, or null to read the mask.
   */
  public void setBlockLayout(BlockMask layout) {
    this.layout = SparseMatmulKernels.checkLayout(layout, (int) iArg(0, 0));
  }

  /** The block layout set by {@link #setBlockLayout}, or null. */
  public BlockMask blockLayout() {
    return layout;
  }

  private boolean hasBias() {
    return iArg(2, 0) != 0;
  }

  @Override
  public int getNumOutputs() {
    return hasBias() ? 4 : 3;
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    SparseMatmulKernels.checkInputs(inputs, true);
    INDArray x = inputs.get(0);
    INDArray w = inputs.get(1);
    INDArray m = inputs.get(2);
    List<LongShapeDescriptor> out =
        list(
            shapeOf(x.shape(), x.dataType()),
            shapeOf(w.shape(), w.dataType()),
            shapeOf(m.shape(), m.dataType()));
    if (hasBias()) {
      out.add(shapeOf(inputs.get(3).shape(), inputs.get(3).dataType()));
    }
    return out;
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    boolean bias = hasBias();
    INDArray dy = inputs.get(bias ? 4 : 3);
    SparseMatmulKernels.backward(
        inputs.get(0),
        inputs.get(1),
        inputs.get(2),
        dy,
        (int) iArg(0, 0),
        layout,
        iArg(1, 0) != 0,
        outputs.get(0),
        outputs.get(1),
        bias ? outputs.get(3) : null);
    outputs.get(2).assign(0.0);
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    throw new UnsupportedOperationException(
        OP_NAME + " has no gradient (second derivatives are not supported)");
  }
}
