package org.sparseflow.mst.core;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Cumulative training FLOPs of an MST run and of the same run dense, step by step, from a {@link
 * FlopCounter} model, the current mask densities and the attention patterns.
 */
final class FlopLedger {
  private FlopCounter counter;
  private Map<String, String> names = new HashMap<>();
  private int seqLen;
  private double sparse;
  private double dense;

  /**
   * FLOP model; {@code names} maps registered weight names to the counter's linear names (identity
   * if absent).
   */
  void setCounter(FlopCounter counter, Map<String, String> names) {
    this.counter = counter;
    this.names = names == null ? new HashMap<>() : new HashMap<>(names);
  }

  /** Context length used for attention-pattern densities (128 when unset). */
  void setSeqLen(int t) {
    seqLen = t;
  }

  /**
   * Adds one step.
   *
   * @param denseWeightGradients whether the step computes dense weight gradients (topology step
   *     with a gradient-based grow mode)
   */
  void account(
      Collection<LayerMask> masks,
      boolean denseWeightGradients,
      List<String> attentionPatterns,
      int attentionBlockSize) {
    if (counter == null) {
      return;
    }
    Map<String, Double> dens = new HashMap<>();
    Set<String> denseDw = new HashSet<>();
    for (LayerMask m : masks) {
      String n = names.getOrDefault(m.name(), m.name());
      dens.put(n, m.density());
      if (denseWeightGradients) {
        denseDw.add(n);
      }
    }
    double[] ad = new double[attentionPatterns.size()];
    int t = seqLen > 0 ? seqLen : 128;
    for (int i = 0; i < ad.length; i++) {
      ad[i] = AttentionDensity.of(attentionPatterns.get(i), t, attentionBlockSize);
    }
    sparse += counter.stepFlops(dens, ad, denseDw);
    dense += counter.denseStepFlops();
  }

  double sparse() {
    return sparse;
  }

  double dense() {
    return dense;
  }

  void restore(double sparseFlops, double denseFlops) {
    sparse = sparseFlops;
    dense = denseFlops;
  }
}
