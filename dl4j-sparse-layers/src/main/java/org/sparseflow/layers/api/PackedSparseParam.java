package org.sparseflow.layers.api;

import java.util.Arrays;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.nn.SparseWeightLayer;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * One packed weight (storage = packed) of a DL4J model: the live packed values of its kept blocks
 * [keptBlocks * b, b], its fixed {@link PackedLayout}, and packing / unpacking to the dense W [nIn,
 * nOut] (zeros outside the kept blocks), e.g. to densify a model or compare with a masked twin.
 */
public final class PackedSparseParam extends WeightHandle {

  PackedSparseParam(
      Model model, Layer modelLayer, SparseWeightLayer layer, String key, String name) {
    super(model, modelLayer, layer, key, name);
  }

  /** The fixed block layout. */
  public PackedLayout layout() {
    return layer.packedLayout(key);
  }

  /** The kept blocks as a block mask. */
  public BlockMask mask() {
    return layout().toMask();
  }

  /** Live view of the packed values [keptBlocks * b, b] (the layer's param). */
  public INDArray packedValues() {
    return layer.getParam(key);
  }

  /** The dense weight [nIn, nOut]: kept blocks filled in, exact zeros elsewhere (a new array). */
  public INDArray denseWeight() {
    return unpack(packedValues(), layout());
  }

  /**
   * Writes the kept blocks of a dense weight [nIn, nOut] into the packed values (values outside the
   * layout are dropped).
   *
   * @throws IllegalArgumentException if the shape differs from [nIn, nOut]
   */
  public void setDenseWeight(INDArray dense) {
    PackedLayout l = layout();
    if (dense == null
        || dense.rank() != 2
        || dense.size(0) != l.rows()
        || dense.size(1) != l.cols()) {
      throw new IllegalArgumentException(
          "dense = "
              + (dense == null ? "null" : Arrays.toString(dense.shape()))
              + " is not allowed for '"
              + name
              + "'; allowed: shape ["
              + l.rows()
              + ", "
              + l.cols()
              + "]");
    }
    PackedBlockLinear.packInto(dense.castTo(packedValues().dataType()), l, packedValues());
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

  /** The dense [rows, cols] weight of packed values (zeros outside the kept blocks). */
  public static INDArray unpack(INDArray packed, PackedLayout layout) {
    return PackedBlockLinear.unpack(packed, layout);
  }

  @Override
  public String toString() {
    return "PackedSparseParam(" + name + ", " + layout() + ")";
  }
}
