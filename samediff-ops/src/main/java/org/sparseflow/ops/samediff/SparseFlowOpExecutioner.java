package org.sparseflow.ops.samediff;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.CustomOp;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.nd4j.linalg.cpu.nativecpu.ops.NativeOpExecutioner;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.backend.JavaKernelExecutioner;

/**
 * The CPU executioner with one addition: {@link JavaKernelOp}s (forward and shape calculation) run
 * in Java; every other op goes to libnd4j unchanged. Installed by {@link
 * org.sparseflow.ops.backend.SparseFlowBackend}, or by hand with {@code
 * -Dopexec=org.sparseflow.ops.samediff.SparseFlowOpExecutioner}.
 */
public class SparseFlowOpExecutioner extends NativeOpExecutioner implements JavaKernelExecutioner {

  public SparseFlowOpExecutioner() {
    super();
  }

  @Override
  public INDArray[] exec(CustomOp op, OpContext context) {
    if (op instanceof JavaKernelOp) {
      JavaKernelOp jk = (JavaKernelOp) op;
      List<INDArray> inputs = context.getInputArrays();
      List<INDArray> outputs = context.getOutputArrays();
      if (outputs == null || outputs.isEmpty() || outputs.contains(null)) {
        outputs = allocate(jk.calculateOutputShapeJava(inputs), outputs);
        context.setOutputArrays(outputs);
      }
      execJavaKernel(jk, inputs, outputs);
      return outputs.toArray(new INDArray[0]);
    }
    return super.exec(op, context);
  }

  @Override
  public INDArray[] exec(CustomOp op) {
    if (op instanceof JavaKernelOp) {
      JavaKernelOp jk = (JavaKernelOp) op;
      List<INDArray> inputs = op.inputArguments();
      List<INDArray> outputs = new ArrayList<>(op.outputArguments());
      if (outputs.isEmpty() || outputs.contains(null)) {
        outputs = allocate(jk.calculateOutputShapeJava(inputs), outputs);
        op.clearArrays();
        for (INDArray in : inputs) {
          op.addInputArgument(in);
        }
        for (INDArray out : outputs) {
          op.addOutputArgument(out);
        }
      }
      execJavaKernel(jk, inputs, outputs);
      return outputs.toArray(new INDArray[0]);
    }
    return super.exec(op);
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShape(CustomOp op) {
    if (op instanceof JavaKernelOp) {
      return ((JavaKernelOp) op).calculateOutputShapeJava(op.inputArguments());
    }
    return super.calculateOutputShape(op);
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShape(CustomOp op, OpContext context) {
    if (op instanceof JavaKernelOp) {
      return ((JavaKernelOp) op).calculateOutputShapeJava(context.getInputArrays());
    }
    return super.calculateOutputShape(op, context);
  }

  /** Runs one Java op; subclasses (e.g. tracing executioners) may wrap this. */
  protected void execJavaKernel(JavaKernelOp op, List<INDArray> inputs, List<INDArray> outputs) {
    op.execJava(inputs, outputs);
  }

  private static List<INDArray> allocate(
      List<LongShapeDescriptor> shapes, List<INDArray> existing) {
    List<INDArray> out = new ArrayList<>();
    for (int i = 0; i < shapes.size(); i++) {
      INDArray e = existing != null && i < existing.size() ? existing.get(i) : null;
      if (e == null) {
        LongShapeDescriptor d = shapes.get(i);
        e = Nd4j.create(d.dataType(), d.getShape(), d.getOrder());
      }
      out.add(e);
    }
    return out;
  }
}
