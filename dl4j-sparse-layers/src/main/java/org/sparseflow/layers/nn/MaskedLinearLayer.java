package org.sparseflow.layers.nn;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.packed.PackedNmLinear;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * The shared base of {@link SparseDenseLayerImpl} and {@link SparseOutputLayerImpl}: one masked
 * weight W [nIn, nOut] with its 0/1 mask M and an optional bias b, z = x (W o M) + b. An interface
 * with default methods rather than a class because the two layers extend different DL4J classes
 * (BaseLayer and BaseOutputLayer).
 */
interface MaskedLinearLayer extends SparseWeightLayer {

  /** The layer's mask bookkeeping for W / M. */
  MaskedWeights masked();

  /** The layer's configuration. */
  default MaskedLinearConf linearConf() {
    return (MaskedLinearConf) conf().getLayer();
  }

  /** The layer's gradient views by param key. */
  Map<String, INDArray> gradientViewMap();

  /** The structured mask of W (rebuilt only when M changed). */
  default SparseMask weightMask() {
    return masked().sparseMask("W", getParam("M"), linearConf().getPattern());
  }

  /** z = x (W o M) + b for input rows x [N, nIn] (packed storage: x W_packed + b). */
  default INDArray linearForward(INDArray x) {
    PackedNmLayout nm = packedNmLayout("W");
    if (nm != null) {
      return PackedNmLinear.forward(
          x, getParam("W"), linearConf().hasBias() ? getParam("b") : null, nm);
    }
    if (linearConf().packedStorage()) {
      return PackedBlockWeights.forward(
          x, getParam("W"), linearConf().hasBias() ? getParam("b") : null, packedLayout("W"));
    }
    return SparseKernels.linearForward(
        x, getParam("W"), linearConf().hasBias() ? getParam("b") : null, weightMask());
  }

  /**
   * Backward pass of {@link #linearForward}: writes dW (and db when {@code biasGradient}) into the
   * gradient views and returns dx.
   */
  default INDArray linearBackward(INDArray x, INDArray delta, boolean biasGradient) {
    Map<String, INDArray> views = gradientViewMap();
    if (linearConf().packedStorage()) {
      if (masked().isDenseRequested()) {
        throw new UnsupportedOperationException(
            PackedStorage.noMaskTools(linearConf().getLayerName()));
      }
      PackedNmLayout nm = packedNmLayout("W");
      INDArray dx;
      if (nm != null) {
        dx = PackedNmLinear.backward(x, getParam("W"), nm, delta, views.get("W"), true);
      } else {
        dx =
            PackedBlockWeights.backward(
                x,
                getParam("W"),
                packedLayout("W"),
                delta,
                views.get("W"),
                masked().growthScores());
      }
      if (biasGradient) {
        INDArray db = views.get("b");
        db.assign(
            Nd4j.createFromArray(SparseKernels.columnSums(delta))
                .castTo(db.dataType())
                .reshape(db.shape()));
      }
      return dx;
    }
    return SparseKernels.linearBackward(
        x,
        getParam("W"),
        weightMask(),
        delta,
        views.get("W"),
        biasGradient ? views.get("b") : null,
        masked().denseBuffer("W", getParam("W")));
  }

  /** The gradient of every param in {@code variables}; M gets none (a zero gradient). */
  default Gradient collectGradients(Collection<String> variables) {
    Map<String, INDArray> views = gradientViewMap();
    if (views.containsKey("M")) {
      views.get("M").assign(0);
    }
    Gradient g = new DefaultGradient();
    for (String k : variables) {
      g.gradientForVariable().put(k, views.get(k));
    }
    return g;
  }

  // ---------------------------------------------------------------- SparseWeightLayer

  @Override
  default List<String> sparseWeightKeys() {
    return masked().weightKeys();
  }

  @Override
  default String maskKey(String weightKey) {
    return masked().maskKey(weightKey);
  }

  @Override
  default String pattern(String weightKey) {
    masked().maskKey(weightKey);
    return linearConf().getPattern();
  }

  @Override
  default PackedLayout packedLayout(String weightKey) {
    masked().maskKey(weightKey);
    return linearConf().packedStorage() ? masked().layout(linearConf()) : null;
  }

  @Override
  default PackedNmLayout packedNmLayout(String weightKey) {
    masked().maskKey(weightKey);
    return linearConf().packedStorage() ? masked().nmLayout(linearConf()) : null;
  }

  @Override
  default int packedSlots(String weightKey) {
    masked().maskKey(weightKey);
    PackedLayout l = packedLayout(weightKey);
    return l == null ? 0 : PackedBlockWeights.slots(getParam(weightKey), l);
  }

  @Override
  default void setPackedLayout(String weightKey, PackedLayout layout) {
    PackedLayout now = packedLayout(weightKey);
    if (now == null) {
      throw new UnsupportedOperationException(
          "layer '"
              + linearConf().getLayerName()
              + "': setPackedLayout needs storage = packed with a block pattern");
    }
    int slots = packedSlots(weightKey);
    PackedStorage.checkRelayout(linearConf().getLayerName(), now, layout, slots);
    // the param keeps its size: a capacity of 0 (= the kept blocks) becomes explicit
    linearConf().setBlockCapacity(slots);
    linearConf().setBlockLayout(layout.keptRowMajor());
  }

  @Override
  default void setGrowthScores(String weightKey, double[] squares) {
    PackedBlockWeights.checkGrowthSink(
        linearConf().getLayerName(), "storage", packedLayout(weightKey), squares);
    masked().growthScores(squares);
  }

  @Override
  default void setDenseGradientRequested(boolean requested) {
    if (requested && linearConf().packedStorage()) {
      throw new UnsupportedOperationException(
          PackedStorage.noMaskTools(linearConf().getLayerName()));
    }
    masked().setDenseRequested(requested);
  }

  @Override
  default boolean isDenseGradientRequested() {
    return masked().isDenseRequested();
  }

  @Override
  default INDArray lastWeightGradient(String weightKey) {
    return masked().lastGradient(weightKey, gradientViewMap());
  }

  @Override
  default void applyMasks() {
    masked().apply(this::getParam);
  }
}
