package org.sparseflow.layers.config;

import java.util.ArrayList;
import java.util.Arrays;
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
 * exceed 1 is made dense and eps is solved again over the remaining tensors (dense fallback). This
 * is the project's one density-allocation rule: MST's per-layer targets use it too, with
 * fixed-density tensors and per-tensor weights.
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
    return allocate(shapes, globalDensity, kind, Map.of(), Map.of());
  }

  /**
   * The general rule. Tensors in {@code fixed} keep their density (e.g. N:M patterns) and are taken
   * out of the budget first; optional per-tensor weights w (absent = 1) multiply a tensor's raw
   * share: density = eps * w * raw, still capped at dense.
   *
   * @param fixed tensor name -> fixed density (may be empty)
   * @param weights tensor name -> weight > 0 (may be empty)
   */
  public static Map<String, Double> allocate(
      Map<String, long[]> shapes,
      double globalDensity,
      DensityDistribution kind,
      Map<String, Double> fixed,
      Map<String, Double> weights) {
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
    double total = 0;
    double budget = 0; // kept weights left for the tensors without a fixed density
    boolean[] fixedOrDense = new boolean[n];
    for (int i = 0; i < n; i++) {
      String name = names.get(i);
      long[] s = checkedShape(name, shapes.get(name));
      double prod = 1;
      double sum = 0;
      for (long d : s) {
        prod *= d;
        sum += d;
      }
      numel[i] = prod;
      total += prod;
      raw[i] = weights.getOrDefault(name, 1.0) * rawShare(kind, s, prod, sum);
      if (fixed.containsKey(name)) {
        fixedOrDense[i] = true;
        budget -= prod * fixed.get(name);
      }
    }
    budget += globalDensity * total;
    boolean[] dense = new boolean[n];
    double eps = 0;
    boolean changed = true;
    while (changed) {
      double left = budget;
      double divisor = 0;
      for (int i = 0; i < n; i++) {
        if (dense[i]) {
          left -= numel[i];
        } else if (!fixedOrDense[i]) {
          divisor += raw[i] * numel[i];
        }
      }
      eps = divisor > 0 ? Math.max(0, left) / divisor : 0;
      // Making a tensor dense can only raise eps (see RigL's loop), so all over-full tensors can be
      // moved to the dense set at once.
      changed = false;
      for (int i = 0; i < n; i++) {
        if (!fixedOrDense[i] && !dense[i] && eps * raw[i] > 1.0) {
          dense[i] = true;
          changed = true;
        }
      }
    }
    Map<String, Double> out = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      String name = names.get(i);
      double d = fixed.containsKey(name) ? fixed.get(name) : dense[i] ? 1.0 : eps * raw[i];
      out.put(name, Math.min(1.0, d));
    }
    return out;
  }

  /** A tensor's share before scaling: 1 (uniform) or its Erdős–Rényi(-Kernel) ratio. */
  private static double rawShare(DensityDistribution kind, long[] s, double prod, double sum) {
    return switch (kind) {
      case UNIFORM -> 1.0;
      case ERK -> sum / prod;
      case ER -> s.length >= 2 ? (double) (s[0] + s[1]) / ((double) s[0] * s[1]) : sum / prod;
    };
  }

  private static long[] checkedShape(String name, long[] s) {
    if (s == null || s.length == 0) {
      throw new IllegalArgumentException(
          "shapes["
              + name
              + "] = "
              + (s == null ? "null" : "[]")
              + " is not allowed; allowed: a shape with at least one dimension");
    }
    for (long d : s) {
      if (d < 1) {
        throw new IllegalArgumentException(
            "shapes["
                + name
                + "] = "
                + Arrays.toString(s)
                + " is not allowed; allowed: every dimension >= 1");
      }
    }
    return s;
  }
}
