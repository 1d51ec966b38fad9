package org.sparseflow.layers.nn;

/**
 * One parameter of a SparseFlow layer: its key, shape and role. Mask params name the weight they
 * mask and carry that weight's pattern and initial density; packed weights with spare block slots
 * give the rows that hold kept blocks ({@code initRows}; -1 for every other param).
 */
record ParamSpec(
    String key,
    long[] shape,
    Role role,
    String maskedWeight,
    String pattern,
    double density,
    long fanIn,
    long fanOut,
    long initRows) {

  enum Role {
    WEIGHT,
    BIAS,
    GAIN,
    MASK,
    /** The kept blocks of a weight, packed [keptBlocks * b, b] row-major (storage = packed). */
    PACKED_WEIGHT
  }

  static ParamSpec weight(String key, long nIn, long nOut) {
    return new ParamSpec(key, new long[] {nIn, nOut}, Role.WEIGHT, null, null, 1.0, nIn, nOut, -1);
  }

  static ParamSpec bias(String key, long n) {
    return new ParamSpec(key, new long[] {1, n}, Role.BIAS, null, null, 1.0, 0, 0, -1);
  }

  static ParamSpec gain(String key, long n) {
    return new ParamSpec(key, new long[] {1, n}, Role.GAIN, null, null, 1.0, 0, 0, -1);
  }

  static ParamSpec mask(
      String key, String weightKey, long nIn, long nOut, String pattern, double density) {
    return new ParamSpec(
        key, new long[] {nIn, nOut}, Role.MASK, weightKey, pattern, density, nIn, nOut, -1);
  }

  /**
   * The packed kept blocks of a weight W [nIn, nOut]: shape [rows, b] (rows = keptBlocks * b),
   * initialised with W's fan-in and fan-out.
   */
  static ParamSpec packedWeight(String key, long rows, long b, long nIn, long nOut) {
    return packedWeight(key, rows, rows, b, nIn, nOut);
  }

  /**
   * As {@link #packedWeight(String, long, long, long, long)} with spare block slots: shape [rows,
   * b], of which the first {@code keptRows} hold the kept blocks and the rest start at zero.
   */
  static ParamSpec packedWeight(String key, long rows, long keptRows, long b, long nIn, long nOut) {
    return new ParamSpec(
        key, new long[] {rows, b}, Role.PACKED_WEIGHT, null, null, 1.0, nIn, nOut, keptRows);
  }

  /** Order of the param view: row-major for packed values (panels are contiguous), else 'f'. */
  char order() {
    return role == Role.PACKED_WEIGHT ? 'c' : 'f';
  }

  long length() {
    return shape[0] * shape[1];
  }
}
