package org.sparseflow.ops.samediff;

import com.google.auto.service.AutoService;
import java.util.Arrays;
import java.util.List;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.LongShapeDescriptor;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.fused.HostArrays;
import org.sparseflow.ops.fused.RowNorm;

/**
 * Backward of {@link FusedLayerNormOp}, op {@value #OP_NAME}. Inputs: x, g, dy. Outputs: dx, dg,
 * db. The row statistics are recomputed per row while the row is in cache, so the pass reads x and
 * dy once and writes dx once. iArgs: [eps bits].
 */
@AutoService(JavaKernelOp.class)
public class FusedLayerNormBpOp extends BaseJavaKernelOp {

  public static final String OP_NAME = "sparseflow_layer_norm_bp";
  private static final Spec SPEC = new Spec(OP_NAME, 3);

  static {
    SparseFlowOps.registerAll();
  }

  public FusedLayerNormBpOp() {}

  public FusedLayerNormBpOp(SameDiff sd, SDVariable x, SDVariable g, SDVariable dy, double eps) {
    super(sd, new SDVariable[] {x, g, dy});
    addIArgument(Double.doubleToLongBits(FusedLayerNormOp.checkEps(eps)));
  }

  @Override
  protected Spec spec() {
    return SPEC;
  }

  private double eps() {
    return Double.longBitsToDouble(iArg(0, 0L));
  }

  @Override
  public List<LongShapeDescriptor> calculateOutputShapeJava(List<INDArray> inputs) {
    INDArray x = inputs.get(0), g = inputs.get(1), dy = inputs.get(2);
    check(x, g, dy);
    return list(
        shapeOf(x.shape(), x.dataType()),
        shapeOf(g.shape(), g.dataType()),
        shapeOf(g.shape(), g.dataType()));
  }

  private static int check(INDArray x, INDArray g, INDArray dy) {
    int nC = FusedLayerNormOp.checkInputs(OP_NAME, x, g, null);
    if (!Arrays.equals(x.shape(), dy.shape()) || dy.dataType() != x.dataType()) {
      throw new IllegalArgumentException(
          OP_NAME
              + ": dy shape = "
              + Arrays.toString(dy.shape())
              + " type "
              + dy.dataType()
              + " is not allowed; allowed: x's shape "
              + Arrays.toString(x.shape())
              + " and type "
              + x.dataType());
    }
    return nC;
  }

  @Override
  public void execJava(List<INDArray> inputs, List<INDArray> outputs) {
    INDArray x = inputs.get(0), g = inputs.get(1), dy = inputs.get(2);
    int nC = check(x, g, dy);
    int n = (int) x.length(), nR = n / nC;
    double[] dg = new double[nC], db = new double[nC];
    if (x.dataType() == DataType.FLOAT) {
      float[] xv = HostArrays.readFloats(x, 0), dyv = HostArrays.readFloats(dy, 1);
      float[] xh = HostArrays.floats(2, n), inv = HostArrays.floats(3, nR);
      RowNorm.normalizeFloatRows(xv, xh, inv, eps(), nR, nC);
      RowNorm.backwardFloatRows(dyv, xh, inv, g.toFloatVector(), dg, db, nR, nC);
      HostArrays.write(dyv, outputs.get(0));
    } else {
      double[] xv = HostArrays.readDoubles(x, 0), dyv = HostArrays.readDoubles(dy, 1);
      double[] dx = HostArrays.doubles(2, n);
      RowNorm.backwardDoubleRows(xv, dyv, g.toDoubleVector(), eps(), dx, dg, db, nR, nC);
      HostArrays.write(dx, outputs.get(0));
    }
    assignVector(dg, outputs.get(1));
    assignVector(db, outputs.get(2));
  }

  private static void assignVector(double[] v, INDArray out) {
    out.assign(Nd4j.createFromArray(v).castTo(out.dataType()).reshape(out.shape()));
  }

  @Override
  public List<SDVariable> doDiff(List<SDVariable> grads) {
    throw new UnsupportedOperationException(
        OP_NAME + " has no gradient (second derivatives are not supported)");
  }
}
