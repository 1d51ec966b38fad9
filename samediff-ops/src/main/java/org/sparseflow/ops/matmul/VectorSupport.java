package org.sparseflow.ops.matmul;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * Whether the JDK Vector API block-sparse kernels ({@link VectorBlockKernels}) can run: the JVM was
 * started with {@code --add-modules jdk.incubator.vector} (without it those classes are never
 * loaded and the BLAS kernels run), {@code -Dsparseflow.vectorKernels=false} is not set, and the
 * operands are fp32 with a block size that is a multiple of the vector length.
 */
public final class VectorSupport {

  /**
   * True when the {@code jdk.incubator.vector} module is in the boot layer and not switched off.
   */
  public static final boolean AVAILABLE =
      ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
          && !"false".equalsIgnoreCase(System.getProperty("sparseflow.vectorKernels"));

  private VectorSupport() {}

  /** True when the vector kernels serve this mask and these (rank-2) operands. */
  static boolean applies(BlockMask mask, INDArray... arrays) {
    if (!AVAILABLE || !VectorBlockKernels.supportsBlock(mask.blockSize())) {
      return false;
    }
    for (INDArray a : arrays) {
      if (a == null) {
        continue;
      }
      if (a.dataType() != DataType.FLOAT || a.rank() != 2 || !TileIo.viewable(a)) {
        return false;
      }
    }
    return true;
  }

  /** Lanes of the preferred fp32 vector (16 with AVX-512, 8 with AVX2), or 0 without the module. */
  public static int lanes() {
    return AVAILABLE ? VectorMicroKernel.L : 0;
  }
}
