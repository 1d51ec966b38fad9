package org.sparseflow.layers.nn;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.shade.jackson.annotation.JsonInclude;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The configuration side of {@link MaskedLinearLayer}: {@link SparseDenseLayer} and {@link
 * SparseOutputLayer} (a masked weight W with its pattern and an optional bias).
 */
interface MaskedLinearConf extends SparseFlowLayerConf {

  /** The masked-weight fields of the layer (not a bean getter, so it stays out of the JSON). */
  MaskedWeightSettings maskedWeights();

  /** Pattern string of W (PatternSpec form). */
  default String getPattern() {
    return maskedWeights().pattern();
  }

  default void setPattern(String pattern) {
    maskedWeights().pattern(pattern);
  }

  /** Target density of the initial mask. */
  default double getDensity() {
    return maskedWeights().density();
  }

  default void setDensity(double density) {
    maskedWeights().density(density);
  }

  /** {@code masked} (dense W plus mask param M) or {@code packed} (see {@link PackedStorage}). */
  default String getStorage() {
    return maskedWeights().storage();
  }

  default void setStorage(String storage) {
    maskedWeights().storage(storage);
  }

  /**
   * Row-major indices of the kept blocks (packed storage, block patterns), the kept weights'
   * in-group offset words (packed storage, n:m patterns; see {@link PackedNmStorage}), else null.
   */
  default int[] getBlockLayout() {
    return maskedWeights().blockLayout();
  }

  default void setBlockLayout(int[] blockLayout) {
    maskedWeights().blockLayout(blockLayout);
  }

  /**
   * Block slots of the packed W (packed storage, block patterns): room for up to this many kept
   * blocks, the slots after the kept ones holding zeros, so that MST can change the layout in place
   * within a phase; 0 (the default, left out of the JSON) means exactly the kept blocks.
   */
  @JsonInclude(JsonInclude.Include.NON_DEFAULT)
  default int getBlockCapacity() {
    return maskedWeights().blockCapacity();
  }

  default void setBlockCapacity(int blockCapacity) {
    maskedWeights().blockCapacity(blockCapacity);
  }

  /** Block slots of the packed W: the capacity, or the kept blocks when none is set. */
  default int blockSlots() {
    int c = getBlockCapacity();
    return c > 0 ? c : getBlockLayout().length;
  }

  /** Whether the layer has a bias param b. */
  boolean hasBias();

  String getLayerName();

  long getNIn();

  long getNOut();

  /** The packed layout, or a clear error when a packed configuration has none. */
  private int[] requireLayout() {
    int[] layout = getBlockLayout();
    if (layout == null) {
      throw new IllegalArgumentException(
          LayerValidation.where(getLayerName())
              + "storage = packed with blockLayout = null; allowed: the kept blocks' row-major"
              + " indices (the layer builder fills them in)");
    }
    return layout;
  }

  /** Whether W is stored packed. Not a bean getter, so it stays out of the JSON. */
  default boolean packedStorage() {
    return PackedStorage.isPacked(getStorage());
  }

  /**
   * W [nIn, nOut], b [nOut] when present, then the mask M of W; with packed storage W is the packed
   * kept blocks [keptBlocks * b, b] and there is no M.
   */
  @Override
  default List<ParamSpec> paramSpecs() {
    List<ParamSpec> l = new ArrayList<>();
    if (packedStorage()) {
      // a configuration read from JSON / YAML (or set through setters) is checked here
      PackedStorage.resolve(
          getLayerName(),
          getStorage(),
          getPattern(),
          getDensity(),
          getNIn(),
          getNOut(),
          requireLayout(),
          0);
      PatternSpec p = SparseKernels.parsePattern("pattern", getPattern());
      if (p.getN() > 0 && getBlockCapacity() != 0) {
        throw new IllegalArgumentException(
            LayerValidation.where(getLayerName())
                + "blockCapacity = "
                + getBlockCapacity()
                + " with pattern = '"
                + getPattern()
                + "'; allowed: 0 (spare slots exist for packed block patterns only)");
      }
      if (p.getN() > 0) { // n:m: kept values [nIn / m * n, nOut]
        l.add(
            ParamSpec.packedWeight(
                "W", getNIn() / p.getM() * p.getN(), getNOut(), getNIn(), getNOut()));
      } else {
        int b = p.getBlockSize();
        PackedStorage.checkCapacity(
            getLayerName(), getBlockCapacity(), getBlockLayout().length, getNIn(), getNOut(), b);
        l.add(
            ParamSpec.packedWeight(
                "W",
                (long) blockSlots() * b,
                (long) getBlockLayout().length * b,
                b,
                getNIn(),
                getNOut()));
      }
      if (hasBias()) {
        l.add(ParamSpec.bias("b", getNOut()));
      }
      return l;
    }
    if (getBlockCapacity() != 0) {
      throw new IllegalArgumentException(
          LayerValidation.where(getLayerName())
              + "blockCapacity = "
              + getBlockCapacity()
              + " with storage = masked; allowed: 0 (a capacity only with storage = packed)");
    }
    l.add(ParamSpec.weight("W", getNIn(), getNOut()));
    if (hasBias()) {
      l.add(ParamSpec.bias("b", getNOut()));
    }
    l.add(ParamSpec.mask("M", "W", getNIn(), getNOut(), getPattern(), getDensity()));
    return l;
  }
}
