package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Adam bias correction for optimizer state that MST reset: remembers, per layer and mask unit, the
 * step after which the unit's state was last reset, and turns that into the factor that makes
 * Adam's update of the unit equal to that of a freshly started Adam.
 *
 * <p>Adam divides its moments by the bias corrections 1 - β^(t+1) of the global step; a state reset
 * after step r has seen only k = t - r gradients, so its moments are too small by 1 - β^k and its
 * update is off by up to ~6x (β1 0.9, β2 0.999, k ~ 10). The factor is [sqrt(1 - β2^k) / (1 -
 * β1^k)] / [sqrt(1 - β2^(t+1)) / (1 - β1^(t+1))] (Kingma and Ba, arXiv 1412.6980, Algorithm 1); 1
 * for units never reset.
 */
final class ResetCorrection {

  /**
   * Per layer and unit: index into resetEventSteps of the unit's last optimizer-state reset (-1:
   * never).
   */
  private final Map<String, int[]> unitResetEvent = new LinkedHashMap<>();

  /** Steps after which some unit's optimizer state was reset, ascending. */
  private final List<Integer> resetEventSteps = new ArrayList<>();

  /** Records the units whose mask changed after step t (their optimizer state is reset). */
  void note(String name, TopologyUpdater.Result r, long t) {
    if (r.newlyActiveElements.length + r.newlyInactiveElements.length == 0) {
      return;
    }
    if (resetEventSteps.isEmpty() || resetEventSteps.get(resetEventSteps.size() - 1) != t) {
      resetEventSteps.add((int) t);
    }
    int event = resetEventSteps.size() - 1;
    LayerMask m = r.mask;
    int[] u =
        unitResetEvent.computeIfAbsent(
            name,
            k -> {
              int[] a = new int[m.unitCount()];
              Arrays.fill(a, -1);
              return a;
            });
    int cols = m.cols();
    for (int e : r.newlyActiveElements) {
      u[m.unitOf(e / cols, e % cols)] = event;
    }
    for (int e : r.newlyInactiveElements) {
      u[m.unitOf(e / cols, e % cols)] = event;
    }
  }

  /** Per-unit factors of layer {@code name} at step t; null when none of its units was reset. */
  float[] unitFactors(String name, long t, double beta1, double beta2) {
    int[] u = unitResetEvent.get(name);
    if (u == null) {
      return null;
    }
    double global = Math.sqrt(1 - Math.pow(beta2, t + 1)) / (1 - Math.pow(beta1, t + 1));
    float[] byEvent = new float[resetEventSteps.size()];
    for (int i = 0; i < byEvent.length; i++) {
      long k = t - resetEventSteps.get(i);
      byEvent[i] =
          k <= 0
              ? 1f
              : (float) (Math.sqrt(1 - Math.pow(beta2, k)) / (1 - Math.pow(beta1, k)) / global);
    }
    float[] out = new float[u.length];
    for (int i = 0; i < u.length; i++) {
      out[i] = u[i] < 0 ? 1f : byEvent[u[i]];
    }
    return out;
  }

  /** Layer name -> encoded per-unit step of the last reset (-1: never), for {@link MstState}. */
  Map<String, String> encode() {
    Map<String, String> resets = new LinkedHashMap<>();
    unitResetEvent.forEach(
        (k, v) -> {
          int[] steps = new int[v.length];
          for (int i = 0; i < v.length; i++) {
            steps[i] = v[i] < 0 ? -1 : resetEventSteps.get(v[i]);
          }
          resets.put(k, MstState.encodeInts(steps));
        });
    return resets;
  }

  /**
   * Replaces the state with a saved one ({@link #encode()} form).
   *
   * @throws IllegalArgumentException naming the layer when it is unknown or its unit count differs
   */
  void restore(Map<String, String> saved, Map<String, LayerMask> masks) {
    Map<String, int[]> savedSteps = new LinkedHashMap<>();
    TreeSet<Integer> distinct = new TreeSet<>();
    saved.forEach(
        (k, v) -> {
          int[] a = MstState.decodeInts(v);
          if (!masks.containsKey(k)) {
            throw Args.bad(
                "saved unitResetSteps layer", k, "one of the registered layers " + masks.keySet());
          }
          if (a.length != masks.get(k).unitCount()) {
            throw Args.bad(
                "saved unitResetSteps of " + k,
                a.length + " units",
                masks.get(k).unitCount() + " units (the layer's mask)");
          }
          savedSteps.put(k, a);
          for (int x : a) {
            if (x >= 0) {
              distinct.add(x);
            }
          }
        });
    unitResetEvent.clear();
    resetEventSteps.clear();
    resetEventSteps.addAll(distinct);
    savedSteps.forEach(
        (k, a) -> {
          int[] ev = new int[a.length];
          for (int i = 0; i < a.length; i++) {
            ev[i] = a[i] < 0 ? -1 : Collections.binarySearch(resetEventSteps, a[i]);
          }
          unitResetEvent.put(k, ev);
        });
  }
}
