package org.sparseflow.dataflow.backend;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.CustomOp;
import org.sparseflow.ops.backend.BackendSwitch;

/**
 * Builds {@link RecordedOp}s from ND4J arrays. Shared by the recording executioner(s); keeps the
 * per-op work to shape copies and a buffer address, so recording stays cheap.
 */
public final class Recording {
  private Recording() {}

  /**
   * Whether the dataflow backend was requested (-Dsparseflow.backend=dataflow or
   * SPARSEFLOW_BACKEND=dataflow).
   */
  public static boolean requested() {
    return BackendSwitch.requested().equals("dataflow");
  }

  static String id(INDArray a) {
    if (a == null) {
      return "null";
    }
    long addr;
    try {
      addr = a.data().address();
    } catch (RuntimeException e) {
      addr = System.identityHashCode(a.data());
    }
    return Long.toHexString(addr) + "+" + a.offset() + ":" + a.length();
  }

  /** Appends the shape, data type name and {@link #id} of each non-null array (none if null). */
  private static void describe(
      List<INDArray> arrays, List<long[]> shapes, List<String> types, List<String> ids) {
    if (arrays == null) {
      return;
    }
    for (INDArray a : arrays) {
      if (a == null) {
        continue;
      }
      shapes.add(a.shape());
      types.add(a.dataType().name());
      ids.add(id(a));
    }
  }

  /** Records one executed op (public so the recording cost can be measured in isolation). */
  public static void record(
      String opName, String category, List<INDArray> in, List<INDArray> out, CustomOp custom) {
    OpRecorder rec = OpRecorder.global();
    if (!rec.isEnabled()) {
      return;
    }
    List<long[]> is = new ArrayList<>(), os = new ArrayList<>();
    List<String> it = new ArrayList<>(),
        ot = new ArrayList<>(),
        ii = new ArrayList<>(),
        oi = new ArrayList<>();
    describe(in, is, it, ii);
    describe(out, os, ot, oi);
    double density = 1.0;
    String pattern = "dense";
    if (opName.startsWith("sparseflow_sparse_matmul")
        && in != null
        && in.size() >= 3
        && in.get(2) != null) {
      // inputs: x, w, mask[, bias]: the mask's density is the sparsity metadata
      INDArray mask = in.get(2);
      long n = mask.length();
      double nnz = n == 0 ? 0 : mask.neq(0).castTo(DataType.DOUBLE).sumNumber().doubleValue();
      density = n == 0 ? 1.0 : Math.max(1e-9, nnz / n);
      long[] bargs = custom == null ? new long[0] : custom.iArgs();
      int block = bargs.length > 0 ? (int) bargs[0] : 1;
      pattern = density >= 1.0 ? "dense" : (block > 1 ? "block" + block : "unstructured");
    }
    rec.add(
        new RecordedOp(
            rec.currentIteration(),
            rec.nextSequence(),
            opName,
            category,
            is,
            it,
            ii,
            os,
            ot,
            oi,
            density,
            pattern));
  }
}
