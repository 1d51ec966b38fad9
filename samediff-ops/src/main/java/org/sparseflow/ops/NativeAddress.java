package org.sparseflow.ops;

import org.bytedeco.javacpp.Pointer;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * Native address of an ND4J array's first element, for kernels that hand raw memory to BLAS or bulk
 * copies.
 */
public final class NativeAddress {

  private NativeAddress() {}

  /**
   * Address of element 0 of {@code a} (a contiguous array or a view with an offset). A view's
   * DataBuffer is itself a view whose address already includes its own offset, so only the array's
   * offset beyond it is added.
   */
  public static long of(INDArray a) {
    Pointer p = a.data().addressPointer();
    long elem = a.data().getElementSize();
    return p.address() + (p.position() + a.offset() - a.data().offset()) * elem;
  }
}
