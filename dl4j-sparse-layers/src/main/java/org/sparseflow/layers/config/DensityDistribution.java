package org.sparseflow.layers.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How a global density is spread over the sparse weight tensors of a model.
 *
 * <ul>
 *   <li>{@link #UNIFORM}: every tensor gets the global density.
 *   <li>{@link #ER} (Erdős–Rényi): density of a tensor proportional to {@code (rows + cols) / (rows
 *       * cols)}, using its first two dimensions.
 *   <li>{@link #ERK} (Erdős–Rényi-Kernel): density proportional to {@code sum(shape) / prod(shape)}
 *       over all dimensions. For rank-2 weights ER and ERK coincide.
 * </ul>
 *
 * ER/ERK follow RigL (Evci et al., "Rigging the Lottery: Making All Tickets Winners", arXiv
 * 1911.11134, Section 3 and Appendix): density_l = eps * raw_l, with eps chosen so that the total
 * number of kept weights equals {@code globalDensity * sum(numel)}; any tensor whose density would
 * exceed 1 is made dense and eps is solved again over the remaining tensors (dense fallback).
 */
public enum DensityDistribution {
  UNIFORM,
  ER,
  ERK;

  /** Same as {@link #allocate(Map, double, DensityDistribution)} with this kind. */
  public Map<String, Double> allocate(Map<String, long[]> shapes, double globalDensity) {
    return allocate(shapes, globalDensity, this);
  }

  /**
   * Per-tensor densities, in the iteration order of {@code shapes}. The total number of kept
   * weights (sum of density * numel) equals {@code globalDensity * sum(numel)} up to floating
   * point.
   *
   * @param shapes tensor name -> shape (every dimension >= 1, rank >= 1)
   * @param globalDensity fraction of weights kept over all tensors, in (0, 1]
   * @param kind distribution
   * @throws IllegalArgumentException on an empty/invalid shape or a density outside (0, 1]
   */
  public static Map<String, Double> allocate(
      Map<String, long[]> shapes, double globalDensity, DensityDistribution kind) {
    Objects.requireNonNull(shapes, "shapes");
    Objects.requireNonNull(kind, "kind");
    if (!(globalDensity > 0.0 && globalDensity <= 1.0)) {
      throw new IllegalArgumentException(
          "globalDensity = " + globalDensity + " is not allowed; allowed: a number in (0, 1]");
    }
    List<String> names = new ArrayList<>(shapes.keySet());
    int n = names.size();
    double[] numel = new double[n];
    double[] raw = new double[n];
    for (int i = 0; i < n; i++) {
      long[] s = shapes.get(names.get(i));
      if (s == null || s.length == 0) {
        throw new IllegalArgumentException(
            "shapes["
                + names.get(i)
                + "] = "
                + (s == null ? "null" : "[]")
                + " is not allowed; allowed: a shape with at least one dimension");
      }
      double prod = 1, sum = 0;
      for (long d : s) {
        if (d < 1) {
          throw new IllegalArgumentException(
              "shapes["
                  + names.get(i)
                  + "] = "
                  + java.util.Arrays.toString(s)
                  + " is not allowed; allowed: every dimension >= 1");
        }
        prod *= d;
        sum += d;
      }
      numel[i] = prod;
      switch (kind) {
        case UNIFORM -> raw[i] = 1.0;
        case ERK -> raw[i] = sum / prod;
        case ER ->
            raw[i] = s.length >= 2 ? (double) (s[0] + s[1]) / ((double) s[0] * s[1]) : sum / prod;
      }
    }
    Map<String, Double> out = new LinkedHashMap<>();
    if (n == 0) {
      return out;
    }
    boolean[] dense = new boolean[n];
    double total = 0;
    for (double v : numel) {
      total += v;
    }
    double eps;
    while (true) {
      double rhs = globalDensity * total, divisor = 0;
      for (int i = 0; i < n; i++) {
        if (dense[i]) {
          rhs -= numel[i];
        } else {
          divisor += raw[i] * numel[i];
        }
      }
      if (divisor == 0) {
        eps = 0;
        break;
      } // everything dense
      eps = rhs / divisor;
      // Making a tensor dense can only raise eps (see RigL's loop), so all over-full tensors can be
      // moved to the dense set at once.
      boolean changed = false;
      for (int i = 0; i < n; i++) {
        if (!dense[i] && eps * raw[i] > 1.0 + 1e-12) {
          dense[i] = true;
          changed = true;
        }
      }
      if (!changed) {
        break;
      }
    }
    for (int i = 0; i < n; i++) {
      out.put(names.get(i), dense[i] ? 1.0 : Math.min(1.0, eps * raw[i]));
    }
    return out;
  }
}
