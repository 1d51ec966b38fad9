package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * Backward of {@link PackedMatmulOp}, op {@value #OP_NAME}. Inputs: x, packed, [bias], dy. Outputs:
 * dx, dPacked (the kept blocks' gradient, packed like the values), [dBias]. iArgs: as the forward
 * op's.
 */
@AutoService(JavaKernelOp.class)
public class PackedMatmulBpOp extends BasePackedMatmulOp {

  public static final String OP_NAME = "sparseflow_packed_matmul_bp";
  // 2 outputs without a bias; getNumOutputs() adds the bias gradient when there is one
  private static final Spec SPEC = new Spec(OP_NAME, 2);

  static {
    SparseFlowOps.registerAll();
  }

  private transient double[] growthSquares;

  public PackedMatmulBpOp() {}

  public PackedMatmulBpOp(
      SameDiff sd,
      SDVariable x,
      SDVariable packed,
      SDVariable bias,
      SDVariable dy,
      PackedLayout layout) {
    super(
        sd,
        bias == null ? new SDVariable[] {x, packed, dy} : new SDVariable[] {x, packed, bias, dy},
        layout);
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  /**
   * While not null, every run also adds the squared norm of each block of the dense weight gradient
   * x^T dy to {@code squares} (row-major block index, length blockRows * blockCols), computed one
   * block row at a time: what MST's gradient-based regrowth ranks pruned blocks by, without a dense
   * gradient array. Null (the default) turns it off.
   */
  public void setGrowthScores(double[] squares) {
    if (squares != null && squares.length != layout().blockRows() * layout().blockCols()) {
      throw new IllegalArgumentException(
          "squares has length "
              + squares.length
              + "; allowed: "
              + layout().blockRows() * layout().blockCols()
              + " (one per block of "
              + layout()
              + ")");
    }
    growthSquares = squares;
  }

  private boolean hasBias() {
    return args().length > 3;
  }

  @Override
  public int getNumOutputs() {
    return hasBias() ? 3 : 2;
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    PackedMatmulKernels.checkInputs(inputs, layout(), 3, "x, packed, [bias], dy");
    List<LongShapeDescriptor> out =
        list(
            shapeOf(inputs.get(0).shape(), inputs.get(0).dataType()),
            shapeOf(inputs.get(1).shape(), inputs.get(1).dataType()));
    if (inputs.size() > 3) {
      out.add(shapeOf(inputs.get(2).shape(), inputs.get(2).dataType()));
    }
    return out;
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    PackedMatmulKernels.checkInputs(inputs, layout(), 3, "x, packed, [bias], dy");
    boolean bias = inputs.size() > 3;
    PackedMatmulKernels.backward(
        inputs.get(0),
        inputs.get(1),
        inputs.get(bias ? 3 : 2),
        layout(),
        outputs.get(0),
        outputs.get(1),
        bias ? outputs.get(2) : null,
        growthSquares);
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    throw new UnsupportedOperationException(
        OP_NAME + " has no gradient (second derivatives are not supported)");
  }
}
