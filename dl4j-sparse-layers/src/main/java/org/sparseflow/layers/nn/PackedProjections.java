package org.sparseflow.layers.nn;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.packed.PackedNmLinear;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The packed projections (projectionStorage = packed) of a {@link CausalSelfAttentionLayerImpl}:
 * their layouts, read from the configuration and cached until it changes, their kernels, and what
 * MST changes (a projection's block layout within its slots, growth scores).
 */
final class PackedProjections {
  static final List<String> WEIGHTS = List.of("Wq", "Wk", "Wv", "Wo");

  private final Supplier<CausalSelfAttentionLayer> conf;
  private final Map<String, PackedLayout> layouts = new HashMap<>();
  private final Map<String, PackedNmLayout> nmLayouts = new HashMap<>();
  private final Map<String, double[]> growth = new HashMap<>();
  private int[][] layoutSource;

  PackedProjections(Supplier<CausalSelfAttentionLayer> conf) {
    this.conf = conf;
  }

  private boolean packed() {
    return conf.get().packedProjections();
  }

  /** Rows of projection weight {@code w}: nOut for "Wo", nIn for "Wq", "Wk", "Wv". */
  private long rows(String w) {
    return w.equals("Wo") ? conf.get().getNOut() : conf.get().getNIn();
  }

  /** The configuration's projection layouts; clears the layout caches when they changed. */
  private int[][] current() {
    int[][] src = conf.get().getProjectionLayouts();
    if (!Arrays.deepEquals(src, layoutSource)) {
      layouts.clear();
      nmLayouts.clear();
      layoutSource = src;
    }
    return src;
  }

  private PatternSpec pattern() {
    return SparseKernels.parsePattern("projectionPattern", conf.get().getProjectionPattern());
  }

  /** The block layout of packed projection {@code w}, or null (masked, or an n:m pattern). */
  PackedLayout layout(String w) {
    if (!packed() || pattern().getN() > 0) {
      return null;
    }
    int[][] src = current();
    return layouts.computeIfAbsent(
        w,
        k ->
            PackedLayout.of(
                rows(k), conf.get().getNOut(), pattern().getBlockSize(), src[WEIGHTS.indexOf(k)]));
  }

  /** The n:m layout of packed projection {@code w}, or null (masked, or a block pattern). */
  PackedNmLayout nmLayout(String w) {
    if (!packed()) {
      return null;
    }
    PatternSpec ps = pattern();
    if (ps.getN() == 0) {
      return null;
    }
    int[][] src = current();
    return nmLayouts.computeIfAbsent(
        w,
        k ->
            PackedNmLayout.of(
                rows(k), conf.get().getNOut(), ps.getN(), ps.getM(), src[WEIGHTS.indexOf(k)]));
  }

  /** x W + bias for packed projection {@code w} with param {@code param}. */
  INDArray forward(String w, INDArray x, INDArray param, INDArray bias) {
    PackedNmLayout nm = nmLayout(w);
    return nm != null
        ? PackedNmLinear.forward(x, param, bias, nm)
        : PackedBlockWeights.forward(x, param, bias, layout(w));
  }

  /** dW of packed projection {@code w} into {@code gradView}; returns dx. */
  INDArray backward(String w, INDArray x, INDArray param, INDArray dy, INDArray gradView) {
    PackedNmLayout nm = nmLayout(w);
    return nm != null
        ? PackedNmLinear.backward(x, param, nm, dy, gradView, true)
        : PackedBlockWeights.backward(x, param, layout(w), dy, gradView, growth.get(w));
  }

  /** Block slots of packed block projection {@code w} (0 when it is not one). */
  int slots(String w, INDArray param) {
    PackedLayout l = layout(w);
    return l == null ? 0 : PackedBlockWeights.slots(param, l);
  }

  /** Lays packed block projection {@code w} out as {@code to} (at most its slots). */
  void setLayout(String w, PackedLayout to, INDArray param) {
    PackedLayout now = layout(w);
    CausalSelfAttentionLayer c = conf.get();
    if (now == null) {
      throw new UnsupportedOperationException(
          "layer '"
              + c.getLayerName()
              + "': setPackedLayout needs projectionStorage = packed with a block pattern");
    }
    int slots = slots(w, param);
    PackedStorage.checkRelayout(c.getLayerName(), now, to, slots);
    int i = WEIGHTS.indexOf(w);
    int[][] all = c.getProjectionLayouts();
    all[i] = to.keptRowMajor();
    c.setProjectionSlots(i, slots); // the params keep their sizes: capacities become explicit
    c.setProjectionLayouts(all);
  }

  /** Turns the growth scores of packed block projection {@code w} on (a sink) or off (null). */
  void setGrowthScores(String w, double[] squares) {
    PackedBlockWeights.checkGrowthSink(
        conf.get().getLayerName(), "projectionStorage", layout(w), squares);
    if (squares == null) {
      growth.remove(w);
    } else {
      growth.put(w, squares);
    }
  }
}
