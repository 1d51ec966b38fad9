package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.packed.PackedLayout;

/**
 * SameDiff op {@value #OP_NAME}: y = x W [+ b] with W held only as its kept b x b blocks (packed
 * storage: the graph's weight variable is the [kept b, b] value array, so the updater's state and
 * the saved graph follow density). Inputs: x [..., rows], packed [kept b, b], optional bias [cols].
 * iArgs: [blockSize, rows, cols, kept block indices in row-major order...]. The packed variable may
 * have spare block slots after the kept ones (capacity that MST keeps for a phase). The block set
 * changes only through {@link #setLayout} (MST's topology steps); gradient: {@link
 * PackedMatmulBpOp}.
 */
@AutoService(JavaKernelOp.class)
public class PackedMatmulOp extends BasePackedMatmulOp {

  public static final String OP_NAME = "sparseflow_packed_matmul";
  private static final Spec SPEC = new Spec(OP_NAME, 1);

  static {
    SparseFlowOps.registerAll();
  }

  public PackedMatmulOp() {}

  public PackedMatmulOp(
      SameDiff sd, SDVariable x, SDVariable packed, SDVariable bias, PackedLayout layout) {
    super(
        sd,
        bias == null ? new SDVariable[] {x, packed} : new SDVariable[] {x, packed, bias},
        layout);
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    PackedMatmulKernels.checkInputs(inputs, layout(), 2, "x, packed, [bias]");
    INDArray x = inputs.get(0);
    long[] shape = x.shape().clone();
    shape[shape.length - 1] = layout().cols();
    return list(shapeOf(shape, inputs.get(1).dataType()));
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    PackedMatmulKernels.checkInputs(inputs, layout(), 2, "x, packed, [bias]");
    INDArray bias = inputs.size() > 2 ? inputs.get(2) : null;
    PackedMatmulKernels.forward(inputs.get(0), inputs.get(1), bias, layout(), outputs.get(0));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    SDVariable[] a = args();
    SDVariable bias = a.length > 2 ? a[2] : null;
    return Arrays.asList(
        new PackedMatmulBpOp(sameDiff, a[0], a[1], bias, grads.get(0), layout()).outputVariables());
  }
}
