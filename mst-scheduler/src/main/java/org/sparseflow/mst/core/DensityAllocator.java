package org.sparseflow.mst.core;

import java.util.LinkedHashMap;
import java.util.Map;
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
 * the budget first. The rule and its kinds are dl4j-sparse-layers' framework-free {@link
 * DensityDistribution} (one definition); this class adapts MST's {rows, cols} shapes to it.
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
    if (kind == DensityDistribution.UNIFORM && weights.values().stream().allMatch(w -> w == 1.0)) {
      // exactly the global density (the general rule gives it up to rounding)
      Map<String, Double> out = new LinkedHashMap<>();
      shapes.keySet().forEach(k -> out.put(k, fixed.getOrDefault(k, globalDensity)));
      return out;
    }
    Map<String, long[]> dims = new LinkedHashMap<>();
    shapes.forEach((k, v) -> dims.put(k, new long[] {v[0], v[1]}));
    return DensityDistribution.allocate(dims, globalDensity, kind, fixed, weights);
  }
}
