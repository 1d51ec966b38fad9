package org.sparseflow.mst.core;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.sparseflow.layers.config.DensityDistribution;

/**
 * Per-layer densities for a global density budget.
 *
 * <ul>
 *   <li>UNIFORM: every layer gets the global density.
 *   <li>ER / ERK: density_l = ε·(rows + cols)/(rows·cols) (Mocanu et al. 2018; Evci et al. 2020,
 *       google-research/rigl sparse_utils.get_sparsities_erdos_renyi), ε chosen so the total number
 *       of kept weights equals density·Σ n_l; a layer whose density would exceed 1 becomes dense
 *       and ε is solved again. For 2-D weights ERK equals ER (the kernel dimensions are 1).
 * </ul>
 *
 * Optional per-layer weights w_l multiply the raw share (density_l = ε·w_l·raw_l, raw_l = 1 for
 * UNIFORM), e.g. to give MLP weights more of the budget than attention projections; a weighted
 * layer is still capped at dense. Layers with a fixed density (N:M) keep it and are taken out of
 * the budget first. The kinds are dl4j-sparse-layers' framework-free {@link DensityDistribution}
 * (one vocabulary); this class adds fixed-density layers and per-layer weights to its rule.
 */
public final class DensityAllocator {

  private DensityAllocator() {}

  /**
   * @param shapes layer name -> {rows, cols}
   * @param fixed layer name -> fixed density (may be empty)
   * @param globalDensity target fraction of kept weights over all layers, in (0, 1]
   */
  public static Map<String, Double> allocate(
      Map<String, int[]> shapes,
      Map<String, Double> fixed,
      double globalDensity,
      DensityDistribution kind) {
    return allocate(shapes, fixed, globalDensity, kind, Map.of());
  }

  /**
   * As {@link #allocate(Map, Map, double, DensityDistribution)} with per-layer weights (layer name
   * -> weight > 0; absent = 1).
   */
  public static Map<String, Double> allocate(
      Map<String, int[]> shapes,
      Map<String, Double> fixed,
      double globalDensity,
      DensityDistribution kind,
      Map<String, Double> weights) {
    if (!(globalDensity > 0 && globalDensity <= 1)) {
      throw Args.bad("globalDensity", globalDensity, "a density in (0, 1]");
    }
    Map<String, Double> out = new LinkedHashMap<>();
    double total = 0;
    double fixedKept = 0;
    for (Map.Entry<String, int[]> e : shapes.entrySet()) {
      double n = (double) e.getValue()[0] * e.getValue()[1];
      total += n;
      if (fixed.containsKey(e.getKey())) {
        fixedKept += n * fixed.get(e.getKey());
      }
    }
    boolean weighted = weights.values().stream().anyMatch(w -> w != 1.0);
    if (kind == DensityDistribution.UNIFORM && !weighted) {
      for (String k : shapes.keySet()) {
        out.put(k, fixed.getOrDefault(k, globalDensity));
      }
      return out;
    }
    Set<String> dense = new HashSet<>();
    double eps = 0;
    for (int iter = 0; iter <= shapes.size(); iter++) {
      double budget = globalDensity * total - fixedKept;
      double rawSum = 0;
      for (Map.Entry<String, int[]> e : shapes.entrySet()) {
        String k = e.getKey();
        double n = (double) e.getValue()[0] * e.getValue()[1];
        if (fixed.containsKey(k)) {
          continue;
        }
        if (dense.contains(k)) {
          budget -= n;
        } else {
          rawSum += n * raw(kind, e.getValue(), weights.getOrDefault(k, 1.0));
        }
      }
      eps = rawSum > 0 ? Math.max(0, budget) / rawSum : 0;
      boolean changed = false;
      for (Map.Entry<String, int[]> e : shapes.entrySet()) {
        String k = e.getKey();
        if (!fixed.containsKey(k)
            && !dense.contains(k)
            && eps * raw(kind, e.getValue(), weights.getOrDefault(k, 1.0)) > 1) {
          dense.add(k);
          changed = true;
        }
      }
      if (!changed) {
        break;
      }
    }
    for (Map.Entry<String, int[]> e : shapes.entrySet()) {
      String k = e.getKey();
      double d =
          fixed.containsKey(k)
              ? fixed.get(k)
              : dense.contains(k)
                  ? 1.0
                  : eps * raw(kind, e.getValue(), weights.getOrDefault(k, 1.0));
      out.put(k, Math.min(1.0, d));
    }
    return out;
  }

  private static double raw(DensityDistribution kind, int[] shape, double weight) {
    double r =
        kind == DensityDistribution.UNIFORM
            ? 1.0
            : (double) (shape[0] + shape[1]) / ((double) shape[0] * shape[1]);
    return weight * r;
  }
}
