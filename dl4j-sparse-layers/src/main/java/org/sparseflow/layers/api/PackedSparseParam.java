package org.sparseflow.layers.api;

import java.util.Arrays;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.nn.SparseWeightLayer;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.packed.PackedNmLinear;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * One packed weight (storage = packed) of a DL4J model: the live packed values of its kept blocks
 * (block patterns: [slots * b, b], kept blocks first), its {@link PackedLayout}, packing /
 * unpacking to the dense W [nIn, nOut] (zeros outside the kept blocks), e.g. to densify a model or
 * compare with a masked twin, and what MST changes: the layout in place ({@link #relayout}) and the
 * growth scores of gradient-based regrowth ({@link #setGrowthScores}).
 */
public final class PackedSparseParam extends WeightHandle {

  PackedSparseParam(
      Model model, Layer modelLayer, SparseWeightLayer layer, String key, String name) {
    super(model, modelLayer, layer, key, name);
  }

  /** The fixed block layout, or null when the weight has an n:m pattern ({@link #nmLayout}). */
  public PackedLayout layout() {
    return layer.packedLayout(key);
  }

  /** The fixed n:m layout, or null when the weight has a block pattern ({@link #layout}). */
  public PackedNmLayout nmLayout() {
    return layer.packedNmLayout(key);
  }

  /**
   * The kept blocks as a block mask.
   *
   * @throws IllegalStateException for an n:m weight: use {@link #sparseMask()}
   */
  public BlockMask mask() {
    if (layout() == null) {
      throw new IllegalStateException(
          "'" + name + "' has an n:m layout, not a block mask; allowed: sparseMask()");
    }
    return layout().toMask();
  }

  /** The kept weights as a mask: a {@link BlockMask} or an {@link NMMask}. */
  public SparseMask sparseMask() {
    PackedNmLayout nm = nmLayout();
    return nm != null ? nm.toMask() : layout().toMask();
  }

  private long rows() {
    PackedNmLayout nm = nmLayout();
    return nm != null ? nm.rows() : layout().rows();
  }

  private long cols() {
    PackedNmLayout nm = nmLayout();
    return nm != null ? nm.cols() : layout().cols();
  }

  /**
   * Live view of the packed values: [slots * b, b] for block patterns (the kept blocks first, in
   * the layout's slot order, then zeros in spare slots; see {@link #slots}), or n:m [nIn / m * n,
   * nOut].
   */
  public INDArray packedValues() {
    return layer.getParam(key);
  }

  /** Live view of the kept blocks' values [keptBlocks * b, b] (n:m: all packed values). */
  public INDArray keptValues() {
    PackedLayout l = layout();
    return l == null ? packedValues() : PackedBlockLinear.keptBlocks(packedValues(), l);
  }

  /**
   * Block slots of the packed values (block patterns; 0 for n:m): room for this many kept blocks.
   * MST sizes it per phase of its schedule ({@link PackedModels#withSlots}).
   */
  public int slots() {
    return layer.packedSlots(key);
  }

  /** The dense weight [nIn, nOut]: kept blocks filled in, exact zeros elsewhere (a new array). */
  public INDArray denseWeight() {
    PackedNmLayout nm = nmLayout();
    return nm != null ? unpack(packedValues(), nm) : unpack(packedValues(), layout());
  }

  /**
   * Lays the weight out as {@code to} in place, within its {@link #slots}: a block kept in both
   * layouts keeps its value and optimizer state, a new block starts at zero with zero state (MST's
   * reset), a dropped block leaves the arrays. The layer reads the new layout from its next forward
   * pass on, and a saved model stores it.
   *
   * @throws IllegalStateException for an n:m weight
   * @throws IllegalArgumentException if {@code to} differs in shape or block size, or keeps more
   *     blocks than there are slots
   */
  public void relayout(PackedLayout to) {
    PackedLayout from = layout();
    if (from == null) {
      throw new IllegalStateException(
          "'" + name + "' has an n:m layout; relayout needs a packed block layout");
    }
    int slots = slots();
    // the layer validates the layout (shape, block size, at most its slots) before it takes it,
    // and the arrays cannot fail to move after that: a refused layout changes nothing
    layer.setPackedLayout(key, to);
    INDArray values = packedValues();
    values.assign(PackedBlockLinear.relayout(values, from, to, slots).reshape(values.shape()));
    for (INDArray st : updaterState()) {
      st.assign(PackedBlockLinear.relayout(st, from, to, slots).reshape(st.shape()));
    }
  }

  /**
   * Turns on (a zeroed array with one entry per block, row-major) or off (null) the growth scores:
   * while on, every backward adds each block's squared norm of the dense weight gradient x^T dy to
   * {@code squares}, one block row at a time, without a dense gradient array.
   *
   * @throws UnsupportedOperationException for an n:m weight
   */
  public void setGrowthScores(double[] squares) {
    layer.setGrowthScores(key, squares);
  }

  /**
   * Writes the kept blocks of a dense weight [nIn, nOut] into the packed values (values outside the
   * layout are dropped).
   *
   * @throws IllegalArgumentException if the shape differs from [nIn, nOut]
   */
  public void setDenseWeight(INDArray dense) {
    if (dense == null || dense.rank() != 2 || dense.size(0) != rows() || dense.size(1) != cols()) {
      throw new IllegalArgumentException(
          "dense = "
              + (dense == null ? "null" : Arrays.toString(dense.shape()))
              + " is not allowed for '"
              + name
              + "'; allowed: shape ["
              + rows()
              + ", "
              + cols()
              + "]");
    }
    INDArray d = dense.castTo(packedValues().dataType());
    PackedNmLayout nm = nmLayout();
    if (nm != null) {
      PackedNmLinear.packInto(d, nm, packedValues());
    } else {
      PackedBlockLinear.packInto(d, layout(), keptValues());
    }
  }

  /**
   * Live views of the optimizer state of the packed values (Adam: m then v), each shaped like
   * {@link #packedValues()}: it covers the kept weights only.
   */
  public List<INDArray> updaterState() {
    return UpdaterStates.views(model, modelLayer, key, packedValues(), true);
  }

  /** Packs the kept blocks of a dense [rows, cols] weight into a new [keptBlocks * b, b] array. */
  public static INDArray pack(INDArray dense, PackedLayout layout) {
    return PackedBlockLinear.pack(dense, layout);
  }

  /**
   * The dense [rows, cols] weight of packed values (zeros outside the kept blocks); spare slots
   * after the kept blocks are ignored.
   */
  public static INDArray unpack(INDArray packed, PackedLayout layout) {
    return PackedBlockLinear.unpack(PackedBlockLinear.keptBlocks(packed, layout), layout);
  }

  /** Packs the kept n:m weights of a dense [rows, cols] weight into a new array. */
  public static INDArray pack(INDArray dense, PackedNmLayout layout) {
    return PackedNmLinear.pack(dense, layout);
  }

  /** The dense [rows, cols] weight of packed n:m values (zeros elsewhere). */
  public static INDArray unpack(INDArray packed, PackedNmLayout layout) {
    return PackedNmLinear.unpack(packed, layout);
  }

  @Override
  public String toString() {
    return "PackedSparseParam(" + name + ", " + (nmLayout() != null ? nmLayout() : layout()) + ")";
  }
}
