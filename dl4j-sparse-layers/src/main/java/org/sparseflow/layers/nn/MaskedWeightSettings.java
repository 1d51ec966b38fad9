package org.sparseflow.layers.nn;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * The masked-weight fields of {@link SparseDenseLayer} and {@link SparseOutputLayer}: pattern,
 * density, storage, the packed block layout and its capacity. The layers ignore it as a JSON
 * property and serialize it through the bean accessors of {@link MaskedLinearConf}, so their JSON
 * keeps the flat keys {@code pattern}, {@code density}, {@code storage}, {@code blockLayout} and
 * {@code blockCapacity}.
 */
final class MaskedWeightSettings implements Serializable {
  private static final long serialVersionUID = 1L;

  private String pattern = "unstructured";
  private double density = 1.0;
  private String storage = PackedStorage.MASKED;
  private int[] blockLayout;
  private int blockCapacity; // block slots of packed W; 0: as many as blockLayout keeps

  /** Defaults: unstructured, density 1, masked storage, no layout; also used by Jackson. */
  MaskedWeightSettings() {}

  MaskedWeightSettings(String pattern, double density, String storage, int[] blockLayout) {
    this.pattern = pattern;
    this.density = density;
    this.storage = storage;
    this.blockLayout = blockLayout == null ? null : blockLayout.clone();
  }

  /** An independent copy (the layers' clone() must not share the mutable settings). */
  MaskedWeightSettings copy() {
    MaskedWeightSettings c = new MaskedWeightSettings(pattern, density, storage, blockLayout);
    c.blockCapacity = blockCapacity;
    return c;
  }

  String pattern() {
    return pattern;
  }

  void pattern(String pattern) {
    this.pattern = pattern;
  }

  double density() {
    return density;
  }

  void density(double density) {
    this.density = density;
  }

  String storage() {
    return storage;
  }

  void storage(String storage) {
    this.storage = storage;
  }

  int[] blockLayout() {
    return blockLayout == null ? null : blockLayout.clone();
  }

  void blockLayout(int[] blockLayout) {
    this.blockLayout = blockLayout == null ? null : blockLayout.clone();
  }

  int blockCapacity() {
    return blockCapacity;
  }

  void blockCapacity(int blockCapacity) {
    this.blockCapacity = blockCapacity;
  }

  /** The fields as {@code pattern=..., density=..., storage=...} for the layers' toString(). */
  String describe() {
    return "pattern=" + pattern + ", density=" + density + ", storage=" + storage;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof MaskedWeightSettings)) {
      return false;
    }
    MaskedWeightSettings that = (MaskedWeightSettings) o;
    return Double.compare(density, that.density) == 0
        && Objects.equals(storage, that.storage)
        && blockCapacity == that.blockCapacity
        && Arrays.equals(blockLayout, that.blockLayout)
        && Objects.equals(pattern, that.pattern);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(blockLayout)
        + Objects.hash(pattern, density, storage, blockCapacity);
  }
}
