package org.sparseflow.mst.core;

import java.util.Arrays;
import java.util.Locale;

/** Argument checks that produce messages naming the argument, the value and what is allowed. */
public final class Args {
  private Args() {}

  public static IllegalArgumentException bad(String name, Object value, String allowed) {
    return new IllegalArgumentException(name + " = " + value + " is invalid; allowed: " + allowed);
  }

  public static double sparsity(String name, double v) {
    if (!(v >= 0.0 && v < 1.0)) {
      throw bad(name, v, "a sparsity in [0, 1)");
    }
    return v;
  }

  public static double unit(String name, double v) {
    if (!(v >= 0.0 && v <= 1.0)) {
      throw bad(name, v, "a value in [0, 1]");
    }
    return v;
  }

  public static long positive(String name, long v) {
    if (v < 1) {
      throw bad(name, v, "an integer >= 1");
    }
    return v;
  }

  public static <E extends Enum<E>> E parseEnum(Class<E> type, String name, String value) {
    if (value == null) {
      throw bad(name, null, Arrays.toString(type.getEnumConstants()));
    }
    try {
      return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
    } catch (IllegalArgumentException e) {
      throw bad(name, value, Arrays.toString(type.getEnumConstants()));
    }
  }
}
