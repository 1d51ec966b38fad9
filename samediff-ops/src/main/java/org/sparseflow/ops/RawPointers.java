package org.sparseflow.ops;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;

/**
 * JavaCPP pointers at raw native addresses, for BLAS calls on sub-matrices of ND4J arrays and for
 * bulk copies between Java arrays and an array's native memory ({@code get}/{@code put}). One set
 * of three per thread (slots 0, 1, 2: the A, B, C operands of one call), re-aimed for every call:
 * the attention and block-sparse kernels make tens of thousands of small BLAS calls per training
 * step, and a fresh pointer object per operand was the largest source of garbage in a gpt-mini step
 * (a young collection every few steps). A pointer is valid until the same thread asks for the same
 * slot again.
 */
public final class RawPointers {

  private RawPointers() {}

  private static final class F extends FloatPointer {
    F at(long addr) {
      address = addr;
      return this;
    }

    F span(long addr, long length) {
      address = addr;
      limit = length;
      capacity = length;
      return this;
    }
  }

  private static final class D extends DoublePointer {
    D at(long addr) {
      address = addr;
      return this;
    }

    D span(long addr, long length) {
      address = addr;
      limit = length;
      capacity = length;
      return this;
    }
  }

  private static final class B extends BytePointer {
    B span(long addr, long length) {
      address = addr;
      limit = length;
      capacity = length;
      return this;
    }
  }

  private static final ThreadLocal<F[]> FLOATS =
      ThreadLocal.withInitial(() -> new F[] {new F(), new F(), new F()});
  private static final ThreadLocal<D[]> DOUBLES =
      ThreadLocal.withInitial(() -> new D[] {new D(), new D(), new D()});

  /** This thread's float pointer {@code slot} (0-2), aimed at {@code address}. */
  public static FloatPointer floatAt(int slot, long address) {
    return FLOATS.get()[slot].at(address);
  }

  /** This thread's double pointer {@code slot} (0-2), aimed at {@code address}. */
  public static DoublePointer doubleAt(int slot, long address) {
    return DOUBLES.get()[slot].at(address);
  }

  /**
   * A buffer over {@code length} floats of native memory at {@code address}, for Java loops over an
   * array's data (the buffer holds no reference that keeps the memory alive: use it while the array
   * is reachable).
   */
  public static FloatBuffer floatBuffer(long address, long length) {
    return new F().span(address, length).asBuffer();
  }

  /** As {@link #floatBuffer}, for doubles. */
  public static DoubleBuffer doubleBuffer(long address, long length) {
    return new D().span(address, length).asBuffer();
  }

  /**
   * A native-order byte buffer over {@code bytes} bytes of native memory at {@code address}, for
   * Vector API loops that load and store lanes directly ({@code FloatVector.fromByteBuffer}); the
   * same lifetime rule as {@link #floatBuffer}.
   */
  public static ByteBuffer byteBuffer(long address, long bytes) {
    return new B().span(address, bytes).asBuffer().order(ByteOrder.nativeOrder());
  }
}
