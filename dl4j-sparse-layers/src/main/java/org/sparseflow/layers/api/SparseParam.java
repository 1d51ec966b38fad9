package org.sparseflow.layers.api;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.layers.nn.SparseWeightLayer;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * One masked weight of a DL4J model: live views of the weight W [nIn, nOut] and its 0/1 mask M,
 * mask updates that keep W and the optimizer state consistent, and access to the raw weight
 * gradient.
 */
public final class SparseParam extends WeightHandle {

  SparseParam(Model model, Layer modelLayer, SparseWeightLayer layer, String key, String name) {
    super(model, modelLayer, layer, key, name);
  }

  /** The layer implementation holding the weight. */
  public SparseWeightLayer layer() {
    return layer;
  }

  /** Live view of the weight [nIn, nOut]; exact zeros outside the mask. */
  public INDArray weight() {
    return layer.getParam(key);
  }

  /**
   * Live view of the 0/1 mask param [nIn, nOut]. Write masks through {@link #setMask}, not here.
   */
  public INDArray mask() {
    return layer.getParam(layer.maskKey(key));
  }

  /** The weight's sparsity pattern. */
  public PatternSpec spec() {
    return PatternSpec.parse(layer.pattern(key));
  }

  /** The current mask as a structured {@link SparseMask}. */
  public SparseMask currentMask() {
    return spec().fromDense(mask());
  }

  /** Fraction of kept weights. */
  public double density() {
    INDArray m = mask();
    return m.sumNumber().doubleValue() / m.length();
  }

  /** Rows (nIn) and columns (nOut) of the weight. */
  public long[] shape() {
    return weight().shape();
  }

  /**
   * Replaces the mask: writes M, zeros W outside the new mask (newly kept weights keep their
   * current value, which is 0 if they were pruned, as RigL/MST regrow them), and zeros the
   * optimizer state (Adam m and v, momentum, ...) at every position whose mask changed and at every
   * pruned position.
   *
   * @throws IllegalArgumentException if the mask's shape or pattern differs from this weight's
   */
  public void setMask(SparseMask newMask) {
    if (newMask == null) {
      throw new IllegalArgumentException(
          "newMask = null; allowed: a SparseMask of shape " + Arrays.toString(shape()));
    }
    long[] s = shape();
    if (newMask.rows() != s[0] || newMask.cols() != s[1]) {
      throw new IllegalArgumentException(
          "newMask for '"
              + name
              + "' has shape ["
              + newMask.rows()
              + ", "
              + newMask.cols()
              + "]; allowed: "
              + Arrays.toString(s));
    }
    if (!Objects.equals(newMask.spec(), spec())) {
      throw new IllegalArgumentException(
          "newMask for '"
              + name
              + "' has pattern "
              + newMask.spec()
              + "; allowed: the weight's pattern "
              + spec());
    }
    INDArray m = mask();
    INDArray next = newMask.toDense(m.dataType());
    // positions whose optimizer state must be reset: changed or pruned
    INDArray reset =
        next.neq(m).castTo(m.dataType()).addi(next.rsub(1.0)).gt(0).castTo(m.dataType());
    m.assign(next);
    weight().muli(next);
    INDArray keepState = reset.rsub(1.0);
    for (INDArray st : updaterState()) {
      st.muli(keepState.castTo(st.dataType()));
    }
  }

  /** {@link #setMask(SparseMask)} from a dense 0/1 array, which must have this weight's pattern. */
  public void setMask(INDArray mask01) {
    if (mask01 == null) {
      throw new IllegalArgumentException(
          "mask01 = null; allowed: a 0/1 array of shape " + Arrays.toString(shape()));
    }
    setMask(spec().fromDense(mask01));
  }

  /**
   * Requests (or stops requesting) the dense weight gradient x^T dy in every following backward
   * pass of this weight's layer (all masked weights of that layer); see {@link #gradient()}. The
   * gradient passed to the optimizer stays masked.
   */
  public void setDenseGradientRequested(boolean requested) {
    layer.setDenseGradientRequested(requested);
  }

  public boolean isDenseGradientRequested() {
    return layer.isDenseGradientRequested();
  }

  /**
   * The raw weight gradient of the last backward pass, before the optimizer: dense if requested,
   * otherwise zero outside the mask. Read it in {@code TrainingListener.onGradientCalculation}; a
   * masked gradient is a view that the updater later overwrites with the update.
   */
  public INDArray gradient() {
    return layer.lastWeightGradient(key);
  }

  /**
   * Live views of this weight's optimizer state, each shaped like W (Adam: m then v; Nesterovs: v;
   * Sgd: none). Creates the network's updater if it does not exist yet.
   */
  public List<INDArray> updaterState() {
    return UpdaterStates.views(model, modelLayer, key, weight(), true);
  }

  @Override
  public String toString() {
    return "SparseParam("
        + name
        + ", shape="
        + Arrays.toString(shape())
        + ", pattern="
        + layer.pattern(key)
        + ", density="
        + density()
        + ")";
  }

  /** Data type of the weight. */
  public DataType dataType() {
    return weight().dataType();
  }
}
