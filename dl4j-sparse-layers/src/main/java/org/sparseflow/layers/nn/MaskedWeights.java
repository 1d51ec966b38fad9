package org.sparseflow.layers.nn;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.bytedeco.javacpp.Pointer;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.shape.Shape;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.NativeAddress;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Bookkeeping shared by the masked layers: which weight has which mask, the dense-gradient request
 * flag and the layer-owned dense gradient buffers.
 */
final class MaskedWeights {
  private final List<String> weightKeys;
  private final List<String> maskKeys;
  private boolean denseRequested;
  private boolean lastWasDense;
  private final Map<String, INDArray> denseGrads = new HashMap<>();

  MaskedWeights(List<String> weightKeys, List<String> maskKeys) {
    this.weightKeys = List.copyOf(weightKeys);
    this.maskKeys = List.copyOf(maskKeys);
  }

  List<String> weightKeys() {
    return weightKeys;
  }

  String maskKey(String weightKey) {
    int i = weightKeys.indexOf(weightKey);
    if (i < 0) {
      throw new IllegalArgumentException(
          "weightKey = '" + weightKey + "' is not a masked weight; allowed: " + weightKeys);
    }
    return maskKeys.get(i);
  }

  /**
   * The structured mask of a weight, rebuilt only when the 0/1 mask param changed (compared against
   * a private copy, so writes through any path - setMask, setParams, a loaded model - are seen).
   */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  SparseMask sparseMask(String weightKey, INDArray mask01, String pattern) {
    Cached c = masks.get(weightKey);
    if (c != null && sameContent(c.copy, mask01)) {
      return c.mask;
    }
    PatternSpec spec = SparseKernels.parsePattern("pattern", pattern);
    SparseMask m = SparseKernels.maskOf(spec, mask01, mask01.dataType());
    INDArray copy;
    try (var ignored = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
      copy = mask01.dup(mask01.ordering()); // same order: sameContent can memcmp
    }
    masks.put(weightKey, new Cached(copy, m));
    return m;
  }

  private record Cached(INDArray copy, SparseMask mask) {}

  /**
   * Bitwise equality (a memcmp for contiguous arrays of the same order; ND4J's equals otherwise).
   * Called on every forward and backward: ND4J's equals here cost ~3% of a block-sparse gpt-mini
   * training step.
   */
  static boolean sameContent(INDArray a, INDArray b) {
    if (a.dataType() != b.dataType() || !Arrays.equals(a.shape(), b.shape())) {
      return false;
    }
    // params are views into the network's flat parameter vector: contiguous ones are compared
    // directly
    if (a.ordering() != b.ordering()
        || !Shape.hasDefaultStridesForShape(a)
        || !Shape.hasDefaultStridesForShape(b)
        || a.elementWiseStride() != 1
        || b.elementWiseStride() != 1) {
      return a.equals(b);
    }
    long bytes = a.length() * a.data().getElementSize();
    return Pointer.memcmp(pointer(a), pointer(b), bytes) == 0;
  }

  private static Pointer pointer(INDArray a) {
    long addr = NativeAddress.of(a);
    return new Pointer() {
      {
        address = addr;
      }
    };
  }

  private final Map<String, Cached> masks = new HashMap<>();

  private final LayoutCache<PackedLayout> blockLayouts = new LayoutCache<>(PackedStorage::layout);
  private final LayoutCache<PackedNmLayout> nmLayouts = new LayoutCache<>(PackedNmStorage::layout);

  /** The packed block layout of a layer configuration, rebuilt only when its array changes. */
  PackedLayout layout(MaskedLinearConf conf) {
    return blockLayouts.get(conf);
  }

  /** The packed n:m layout of a layer configuration (null if not n:m), rebuilt on change. */
  PackedNmLayout nmLayout(MaskedLinearConf conf) {
    return nmLayouts.get(conf);
  }

  /**
   * A layout built from a layer configuration, rebuilt when the configuration's block-layout array
   * changes (or while it is null).
   */
  private static final class LayoutCache<T> {
    private final Function<MaskedLinearConf, T> build;
    private int[] source;
    private T value;

    LayoutCache(Function<MaskedLinearConf, T> build) {
      this.build = build;
    }

    T get(MaskedLinearConf conf) {
      int[] src = conf.getBlockLayout();
      if (value == null || !Arrays.equals(src, source)) {
        value = build.apply(conf);
        source = src;
      }
      return value;
    }
  }

  private double[] growthScores;

  /** The sink of the dense gradient's squared block norms of packed W, or null (off). */
  double[] growthScores() {
    return growthScores;
  }

  void growthScores(double[] squares) {
    growthScores = squares;
  }

  void setDenseRequested(boolean r) {
    denseRequested = r;
  }

  boolean isDenseRequested() {
    return denseRequested;
  }

  /** The dense gradient buffer for this backward, or null when no dense gradient was requested. */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  INDArray denseBuffer(String weightKey, INDArray weight) {
    lastWasDense = denseRequested;
    if (!denseRequested) {
      return null;
    }
    INDArray buf = denseGrads.get(weightKey);
    if (buf == null
        || !Arrays.equals(buf.shape(), weight.shape())
        || buf.dataType() != weight.dataType()) {
      try (var ignored = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        buf = Nd4j.create(weight.dataType(), weight.shape());
      }
      denseGrads.put(weightKey, buf);
    }
    return buf;
  }

  INDArray lastGradient(String weightKey, Map<String, INDArray> gradientViews) {
    maskKey(weightKey);
    if (lastWasDense && denseGrads.containsKey(weightKey)) {
      return denseGrads.get(weightKey);
    }
    return gradientViews == null ? null : gradientViews.get(weightKey);
  }

  void apply(Function<String, INDArray> params) {
    for (int i = 0; i < weightKeys.size(); i++) {
      INDArray m = params.apply(maskKeys.get(i));
      if (m != null) {
        params.apply(weightKeys.get(i)).muli(m);
      }
    }
  }
}
