package org.sparseflow.ops.fused;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.RawPointers;

/**
 * Bulk copies between ND4J arrays and per-thread Java scratch arrays, in 'c' order, through the
 * native-memory gateway ({@link NativeAddress}, {@link RawPointers}). Scratch arrays grow and are
 * reused per thread and slot: at gpt-mini size they are megabytes, and fresh ones per call were G1
 * humongous allocations.
 */
public final class HostArrays {
  /** Number of scratch slots per thread and element type. */
  public static final int SLOTS = 4;

  private static final ThreadLocal<float[][]> FLOATS =
      ThreadLocal.withInitial(() -> new float[SLOTS][0]);
  private static final ThreadLocal<double[][]> DOUBLES =
      ThreadLocal.withInitial(() -> new double[SLOTS][0]);

  private HostArrays() {}

  /** This thread's float scratch array {@code slot}, at least {@code n} long. */
  public static float[] floats(int slot, int n) {
    float[][] f = FLOATS.get();
    if (f[slot].length < n) {
      f[slot] = new float[n];
    }
    return f[slot];
  }

  /** This thread's double scratch array {@code slot}, at least {@code n} long. */
  public static double[] doubles(int slot, int n) {
    double[][] d = DOUBLES.get();
    if (d[slot].length < n) {
      d[slot] = new double[n];
    }
    return d[slot];
  }

  /** Whether {@code a}'s elements lie contiguous in 'c' order from its first element. */
  public static boolean cContiguous(INDArray a) {
    if (a.isEmpty() || a.length() <= 1) {
      return true;
    }
    long[] st = a.stride();
    long[] sh = a.shape();
    long expect = 1;
    for (int i = sh.length - 1; i >= 0; i--) {
      if (sh[i] != 1 && st[i] != expect) {
        return false;
      }
      expect *= sh[i];
    }
    return true;
  }

  /** {@code a} itself when 'c'-contiguous, else a 'c' copy. */
  public static INDArray canonical(INDArray a) {
    return cContiguous(a) ? a : a.dup('c');
  }

  /** The elements of FLOAT {@code a} in 'c' order, in scratch slot {@code slot}. */
  public static float[] readFloats(INDArray a, int slot) {
    requireType(a, DataType.FLOAT);
    INDArray c = canonical(a);
    int n = (int) c.length();
    float[] out = floats(slot, n);
    RawPointers.floatBuffer(NativeAddress.of(c), n).get(out, 0, n);
    return out;
  }

  /** The elements of DOUBLE {@code a} in 'c' order, in scratch slot {@code slot}. */
  public static double[] readDoubles(INDArray a, int slot) {
    requireType(a, DataType.DOUBLE);
    INDArray c = canonical(a);
    int n = (int) c.length();
    double[] out = doubles(slot, n);
    RawPointers.doubleBuffer(NativeAddress.of(c), n).get(out, 0, n);
    return out;
  }

  /** Writes the first {@code out.length()} values into FLOAT {@code out} in 'c' order. */
  public static void write(float[] values, INDArray out) {
    requireType(out, DataType.FLOAT);
    int n = (int) out.length();
    if (cContiguous(out)) {
      RawPointers.floatBuffer(NativeAddress.of(out), n).put(values, 0, n);
    } else {
      INDArray tmp = Nd4j.createUninitialized(out.dataType(), out.shape(), 'c');
      RawPointers.floatBuffer(NativeAddress.of(tmp), n).put(values, 0, n);
      out.assign(tmp);
    }
  }

  /** Writes the first {@code out.length()} values into DOUBLE {@code out} in 'c' order. */
  public static void write(double[] values, INDArray out) {
    requireType(out, DataType.DOUBLE);
    int n = (int) out.length();
    if (cContiguous(out)) {
      RawPointers.doubleBuffer(NativeAddress.of(out), n).put(values, 0, n);
    } else {
      INDArray tmp = Nd4j.createUninitialized(out.dataType(), out.shape(), 'c');
      RawPointers.doubleBuffer(NativeAddress.of(tmp), n).put(values, 0, n);
      out.assign(tmp);
    }
  }

  private static void requireType(INDArray a, DataType dt) {
    if (a.dataType() != dt) {
      throw new IllegalArgumentException(
          "array data type = " + a.dataType() + " is not allowed here; allowed: " + dt);
    }
  }
}
