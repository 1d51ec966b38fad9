package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.sparseflow.ops.fused.GeluKernel;
import org.sparseflow.ops.fused.GeluMath;

/**
 * SameDiff op {@value #OP_NAME}: {@code gelu(z) = z sigmoid(1.702 z)}, the formula of ND4J's {@code
 * gelu} op ({@link GeluMath}). The forward pass is a JDK Vector API pass for FLOAT ({@link
 * GeluKernel}; ND4J's GELU transform otherwise, e.g. DOUBLE); the backward op {@link FusedGeluBpOp}
 * is one pass from z, gelu(z) and dy, without the transcendental function and the separate multiply
 * of ND4J's {@code gelu_derivative} and {@code mul}.
 */
@AutoService(JavaKernelOp.class)
public class FusedGeluOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_gelu";
  private static final Spec SPEC = new Spec(OP_NAME, 1);

  static {
    SparseFlowOps.registerAll();
  }

  public FusedGeluOp() {}

  public FusedGeluOp(SameDiff sd, SDVariable z) {
    super(sd, new SDVariable[] {z});
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  static void checkType(String op, String what, INDArray a) {
    if (a.dataType() != DataType.FLOAT && a.dataType() != DataType.DOUBLE) {
      throw new IllegalArgumentException(
          op + ": " + what + " data type = " + a.dataType() + "; allowed: FLOAT, DOUBLE");
    }
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    INDArray z = inputs.get(0);
    checkType(OP_NAME, "z", z);
    return list(shapeOf(z.shape(), z.dataType()));
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    INDArray z = inputs.get(0);
    checkType(OP_NAME, "z", z);
    GeluKernel.forward(z, outputs.get(0));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    SDVariable z = args()[0];
    return Arrays.asList(
        new FusedGeluBpOp(sameDiff, z, outputVariable(), grads.get(0)).outputVariables());
  }
}
