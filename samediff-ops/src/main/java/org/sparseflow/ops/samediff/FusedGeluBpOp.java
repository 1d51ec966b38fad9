package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.fused.GeluKernel;
import org.sparseflow.ops.fused.GeluMath;

/**
 * Backward of {@link FusedGeluOp}, op {@value #OP_NAME}. Inputs: z, y = gelu(z), dy. Output: dz =
 * dy o gelu'(z), with the sigmoid recovered as y / z ({@link GeluMath#backward}), by {@link
 * GeluKernel} (Vector API over the buffers for FLOAT).
 */
@AutoService(JavaKernelOp.class)
public class FusedGeluBpOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_gelu_bp";
  private static final Spec SPEC = new Spec(OP_NAME, 1);

  static {
    SparseFlowOps.registerAll();
  }

  public FusedGeluBpOp() {}

  public FusedGeluBpOp(SameDiff sd, SDVariable z, SDVariable y, SDVariable dy) {
    super(sd, new SDVariable[] {z, y, dy});
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    INDArray z = check(inputs);
    return list(shapeOf(z.shape(), z.dataType()));
  }

  private static INDArray check(List<INDArray> inputs) {
    INDArray z = inputs.get(0);
    FusedGeluOp.checkType(OP_NAME, "z", z);
    for (int i = 1; i < 3; i++) {
      INDArray a = inputs.get(i);
      if (!Arrays.equals(a.shape(), z.shape()) || a.dataType() != z.dataType()) {
        throw new IllegalArgumentException(
            OP_NAME
                + ": input "
                + i
                + " shape = "
                + Arrays.toString(a.shape())
                + " type "
                + a.dataType()
                + " is not allowed; allowed: z's shape "
                + Arrays.toString(z.shape())
                + " and type "
                + z.dataType());
      }
    }
    return z;
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    INDArray z = check(inputs);
    GeluKernel.backward(z, inputs.get(1), inputs.get(2), outputs.get(0));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    throw new UnsupportedOperationException(
        OP_NAME + " has no gradient (second derivatives are not supported)");
  }
}
