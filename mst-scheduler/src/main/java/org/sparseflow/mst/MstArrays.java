package org.sparseflow.mst;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.mst.core.TopologyUpdater;

/**
 * Conversions between ND4J weights and the row-major float arrays of the framework-free core; used
 * by the DL4J and SameDiff adapters here and by the Spark driver.
 */
public final class MstArrays {
  private MstArrays() {}

  /** The elements of a [rows, cols] array as row-major floats. */
  public static float[] rowMajor(INDArray a) {
    return a.castTo(DataType.FLOAT).dup('c').data().asFloat();
  }

  /** A new [rows, cols] array of type {@code dt} from row-major floats. */
  public static INDArray toArray(float[] rowMajor, int rows, int cols, DataType dt) {
    return Nd4j.create(rowMajor, new long[] {rows, cols}, 'c').castTo(dt);
  }

  /** 1 everywhere except 0 at elements whose mask changed (grown or pruned). */
  public static INDArray changedKeep(TopologyUpdater.Result r, DataType dt) {
    int rows = r.mask.rows();
    int cols = r.mask.cols();
    float[] keep = new float[rows * cols];
    Arrays.fill(keep, 1f);
    for (int e : r.newlyActiveElements) {
      keep[e] = 0f;
    }
    for (int e : r.newlyInactiveElements) {
      keep[e] = 0f;
    }
    return toArray(keep, rows, cols, dt);
  }
}
