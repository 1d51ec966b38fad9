package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * SameDiff op {@value #OP_NAME}: y = x (W o M) [+ b]. Inputs: x [N, nIn], W [nIn, nOut], mask M
 * [nIn, nOut] (0/1), optional bias [nOut]. iArgs: [blockSize (0 = element-wise mask),
 * denseWeightGrad (0/1)]. Gradient: {@link SparseMatmulBpOp}; the mask gets a zero gradient.
 */
@AutoService(JavaKernelOp.class)
public class SparseMatmulOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_sparse_matmul";
  private static final Spec SPEC = new Spec(OP_NAME, 1);

  static {
    SparseFlowOps.registerAll();
  }

  private transient BlockMask layout;

  public SparseMatmulOp() {}

  public SparseMatmulOp(
      SameDiff sd,
      SDVariable x,
      SDVariable w,
      SDVariable mask,
      SDVariable bias,
      int blockSize,
      boolean denseWeightGrad) {
    super(sd, bias == null ? new SDVariable[] {x, w, mask} : new SDVariable[] {x, w, mask, bias});
    addIArgument(blockSize, denseWeightGrad ? 1 : 0);
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  public int blockSize() {
    return (int) iArg(0, 0);
  }

  public boolean denseWeightGrad() {
    return iArg(1, 0) != 0;
  }

  /**
   * Whether gradients built from now on ({@link #doDiff}) produce the dense weight gradient; an
   * existing backward op is switched with {@link SparseMatmulBpOp#setDenseWeightGrad}.
   */
  public void setDenseWeightGrad(boolean on) {
    setIArg(1, on ? 1 : 0);
  }

  /**
   * Block layout to use instead of reading the mask input on every call (null: read the mask). The
   * owner of the mask keeps the two consistent: it sets the layout again whenever it changes the
   * mask array (as {@code MstListener} does at topology steps). Not serialised: a loaded graph
   * reads its mask input until a layout is set.
   */
  public void setBlockLayout(BlockMask layout) {
    this.layout = SparseMatmulKernels.checkLayout(layout, blockSize());
  }

  /** The block layout set by {@link #setBlockLayout}, or null. */
  public BlockMask blockLayout() {
    return layout;
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    SparseMatmulKernels.checkInputs(inputs, false);
    INDArray x = inputs.get(0);
    INDArray w = inputs.get(1);
    long[] shape = x.shape().clone();
    shape[shape.length - 1] = w.size(1);
    return list(shapeOf(shape, w.dataType()));
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    INDArray bias = inputs.size() > 3 ? inputs.get(3) : null;
    SparseMatmulKernels.forward(
        inputs.get(0), inputs.get(1), inputs.get(2), bias, blockSize(), layout, outputs.get(0));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    SDVariable[] a = args();
    SDVariable bias = a.length > 3 ? a[3] : null;
    SDVariable[] g =
        new SparseMatmulBpOp(
                sameDiff, a[0], a[1], a[2], bias, grads.get(0), blockSize(), denseWeightGrad())
            .outputVariables();
    return Arrays.asList(g);
  }
}
