package org.sparseflow.ops.samediff;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.DynamicCustomOp;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;

/**
 * Plumbing shared by SparseFlow Java ops: a hash that collides with no libnd4j op (SameDiff
 * re-creates ops from (hash, name) and looks the hash up first), no libnd4j descriptor, shapes
 * computed in Java. Integer configuration lives in iArgs, which FlatBuffers (save/load, gradient
 * cloning) preserves.
 */
public abstract class BaseJavaKernelOp extends DynamicCustomOp implements JavaKernelOp {

  protected BaseJavaKernelOp() {}

  protected BaseJavaKernelOp(SameDiff sd, SDVariable[] args) {
    super(sd, args);
  }

  /** An op's name (a unique {@code sparseflow_...}) and number of outputs. */
  protected record Spec(String name, int outputs) {}

  /**
   * This op's name and output count: a static constant of the op class, so that it is ready while
   * the superclass constructors run (they ask for the op name).
   */
  protected abstract Spec spec();

  @Override
  public String opName() {
    return spec().name();
  }

  @Override
  public int getNumOutputs() {
    return spec().outputs();
  }

  /**
   * 64-bit FNV-1a hash of "sparseflow:" + opName, so it cannot match a libnd4j op hash by design.
   */
  @Override
  public long opHash() {
    long h = 0xcbf29ce484222325L;
    for (byte b : ("sparseflow:" + opName()).getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    return h;
  }

  @Override
  public Map<String, Object> propertiesForFunction() {
    return new HashMap<>();
  }

  @Override
  public void setPropertiesForFunction(Map<String, Object> properties) {
    // configuration is carried by iArgs
  }

  @Override
  public void configureFromArguments() {
    // configuration is carried by iArgs
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShape() {
    return calculateOutputShapeJava(inputArguments());
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShape(OpContext oc) {
    return calculateOutputShapeJava(oc.getInputArrays());
  }

  /** Configuration integer i, or the default when absent. */
  protected long iArg(int i, long dflt) {
    long[] a = iArgs();
    return a != null && a.length > i ? a[i] : dflt;
  }

  /** Sets configuration integer i in place (it must exist). */
  protected void setIArg(int i, long value) {
    if (iArguments == null || i >= iArguments.size()) {
      throw new IllegalStateException(
          opName() + " has " + (iArguments == null ? 0 : iArguments.size()) + " iArgs; no " + i);
    }
    iArguments.set(i, value);
  }

  /** Replaces all configuration integers. */
  protected void replaceIArgs(long[] values) {
    iArguments.clear();
    addIArgument(values);
  }

  protected static LongShapeDescriptor shapeOf(long[] shape, DataType dt) {
    return LongShapeDescriptor.fromShape(shape, dt);
  }

  protected static List<LongShapeDescriptor> list(LongShapeDescriptor... d) {
    return new ArrayList<>(Arrays.asList(d));
  }

  /** Data types of outputs: by default all equal to the first input's type. */
  @Override
  public List<DataType> calculateOutputDataTypes(List<DataType> dataTypes) {
    List<DataType> out = new ArrayList<>();
    for (int i = 0; i < getNumOutputs(); i++) {
      out.add(dataTypes.get(0));
    }
    return out;
  }

  protected static INDArray in(List<INDArray> inputs, int i) {
    return inputs.get(i);
  }
}
