package org.sparseflow.dataflow.graph;

import java.util.Locale;

/** Element types the simulator distinguishes; only the byte width matters for timing. */
public enum DType {
  BF16(2),
  FP16(2),
  FP32(4),
  FP64(8),
  INT8(1),
  INT32(4),
  INT64(8),
  BOOL(1);

  private final int bytes;

  DType(int bytes) {
    this.bytes = bytes;
  }

  public int bytes() {
    return bytes;
  }

  /**
   * Maps ND4J data type names (FLOAT, HALF, BFLOAT16, DOUBLE, INT, LONG, ...) and our own names.
   */
  public static DType fromName(String name) {
    String n = name.toUpperCase(Locale.ROOT);
    switch (n) {
      case "BF16":
      case "BFLOAT16":
        return BF16;
      case "FP16":
      case "HALF":
      case "FLOAT16":
        return FP16;
      case "FP32":
      case "FLOAT":
        return FP32;
      case "FP64":
      case "DOUBLE":
        return FP64;
      case "INT8":
      case "BYTE":
      case "UBYTE":
      case "UINT8":
        return INT8;
      case "INT32":
      case "INT":
      case "UINT32":
      case "SHORT":
      case "INT16":
      case "UINT16":
        return INT32;
      case "INT64":
      case "LONG":
      case "UINT64":
        return INT64;
      case "BOOL":
        return BOOL;
      default:
        return FP32;
    }
  }
}
