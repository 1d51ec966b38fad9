package org.sparseflow.layers.nn;

/**
 * One parameter of a SparseFlow layer: its key, shape and role. Mask params name the weight they
 * mask and carry that weight's pattern and initial density.
 */
record ParamSpec(
    String key,
    long[] shape,
    Role role,
    String maskedWeight,
    String pattern,
    double density,
    long fanIn,
    long fanOut) {

  enum Role {
    WEIGHT,
    BIAS,
    GAIN,
    MASK
  }

  static ParamSpec weight(String key, long nIn, long nOut) {
    return new ParamSpec(key, new long[] {nIn, nOut}, Role.WEIGHT, null, null, 1.0, nIn, nOut);
  }

  static ParamSpec bias(String key, long n) {
    return new ParamSpec(key, new long[] {1, n}, Role.BIAS, null, null, 1.0, 0, 0);
  }

  static ParamSpec gain(String key, long n) {
    return new ParamSpec(key, new long[] {1, n}, Role.GAIN, null, null, 1.0, 0, 0);
  }

  static ParamSpec mask(
      String key, String weightKey, long nIn, long nOut, String pattern, double density) {
    return new ParamSpec(
        key, new long[] {nIn, nOut}, Role.MASK, weightKey, pattern, density, nIn, nOut);
  }

  long length() {
    return shape[0] * shape[1];
  }
}
