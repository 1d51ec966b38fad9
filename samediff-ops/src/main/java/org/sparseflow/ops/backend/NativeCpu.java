package org.sparseflow.ops.backend;

import org.bytedeco.openblas.global.openblas_nolapack;
import org.nd4j.linalg.factory.Nd4jBackend;
import org.sparseflow.ops.samediff.SparseFlowCpuBackend;

/**
 * The only place that links against nd4j-native and OpenBLAS classes on behalf of {@link Backends}
 * and {@link SparseFlowBackend}; loaded only after {@link Backends#nativeCpuPresent()} said yes.
 */
final class NativeCpu {

  private NativeCpu() {}

  static Nd4jBackend newBackend(String executionerClassName) {
    return new SparseFlowCpuBackend(executionerClassName);
  }

  /** Loads OpenBLAS (throws a LinkageError when it cannot). */
  static void loadOpenBlas() {
    openblas_nolapack.blas_get_num_threads();
  }
}
