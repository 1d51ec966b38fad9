package org.sparseflow.layers.nn;

import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.layers.InputTypeUtil;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.shade.jackson.annotation.JsonIgnore;

/**
 * Sparse fully connected layer: y = act(x (W o M) + b). Params "W" [nIn, nOut], "b" [1, nOut] (if
 * hasBias) and the frozen 0/1 mask "M" [nIn, nOut] (updater Sgd(0), no regularization), so the mask
 * is saved with the model. W holds exact zeros outside M, also after every optimizer step.
 *
 * <p>Also accepts recurrent input [minibatch, nIn, T] (NCW) and then applies the same weights at
 * every time step, giving [minibatch, nOut, T] (the MLP of a transformer block).
 *
 * <p>{@code pattern}: {@code unstructured}, {@code block8|16|32|64} or {@code n:m}; {@code
 * density}: fraction of weights kept by the initial (seeded random) mask, in (0, 1] (N:M patterns
 * keep n/m).
 */
public class SparseDenseLayer extends SparseFlowFeedForwardLayer implements MaskedLinearConf {
  private static final long serialVersionUID = 1L;

  // not a JSON property itself: the bean accessors of MaskedLinearConf (getPattern, setPattern,
  // ...)
  // keep the flat keys pattern, density, storage and blockLayout
  @JsonIgnore private MaskedWeightSettings maskedWeights = new MaskedWeightSettings();
  private boolean hasBias = true;

  /** Jackson. */
  public SparseDenseLayer() {}

  protected SparseDenseLayer(Builder b) {
    super(b);
    this.maskedWeights = b.weights.settings();
    this.hasBias = b.hasBias;
    initializeConstraints(b);
  }

  @Override
  Layer newImplementation(NeuralNetConfiguration conf, DataType dataType) {
    return new SparseDenseLayerImpl(conf, dataType);
  }

  /**
   * Recurrent input [minibatch, nIn, T] is handled per time step (no preprocessor), giving
   * [minibatch, nOut, T].
   */
  @Override
  public InputType getOutputType(int layerIndex, InputType inputType) {
    if (inputType != null && inputType.getType() == InputType.Type.RNN) {
      return InputType.recurrent(
          nOut, ((InputType.InputTypeRecurrent) inputType).getTimeSeriesLength(), RNNFormat.NCW);
    }
    return super.getOutputType(layerIndex, inputType);
  }

  @Override
  public void setNIn(InputType inputType, boolean override) {
    if (inputType != null && inputType.getType() == InputType.Type.RNN) {
      if (nIn <= 0 || override) {
        nIn = ((InputType.InputTypeRecurrent) inputType).getSize();
      }
      return;
    }
    super.setNIn(inputType, override);
  }

  @Override
  public InputPreProcessor getPreProcessorForInputType(InputType inputType) {
    if (inputType != null && inputType.getType() == InputType.Type.RNN) {
      return InputTypeUtil.getPreprocessorForInputTypeRnnLayers(
          inputType, RNNFormat.NCW, getLayerName());
    }
    return super.getPreProcessorForInputType(inputType);
  }

  @Override
  public MaskedWeightSettings maskedWeights() {
    return maskedWeights;
  }

  @Override
  public SparseDenseLayer clone() {
    SparseDenseLayer c = (SparseDenseLayer) super.clone();
    c.maskedWeights = maskedWeights.copy();
    return c;
  }

  public boolean isHasBias() {
    return hasBias;
  }

  public void setHasBias(boolean hasBias) {
    this.hasBias = hasBias;
  }

  @Override
  public boolean hasBias() {
    return hasBias;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof SparseDenseLayer) || !super.equals(o)) {
      return false;
    }
    SparseDenseLayer that = (SparseDenseLayer) o;
    return hasBias == that.hasBias && maskedWeights.equals(that.maskedWeights);
  }

  @Override
  public int hashCode() {
    return Objects.hash(super.hashCode(), maskedWeights, hasBias);
  }

  @Override
  public String toString() {
    return "SparseDenseLayer(name="
        + getLayerName()
        + ", nIn="
        + nIn
        + ", nOut="
        + nOut
        + ", "
        + maskedWeights.describe()
        + ", hasBias="
        + hasBias
        + ")";
  }

  /** Builder in DL4J style. */
  // DL4J's Layer.Builder declares a generic <E extends Layer> E build(); javac reports the concrete
  // override, which gives callers the layer's own type, as an unchecked conversion on the class.
  @SuppressWarnings("unchecked")
  public static class Builder extends FeedForwardLayer.Builder<Builder>
      implements MaskedWeightBuilder<Builder> {
    private final MaskedWeightOptions weights = new MaskedWeightOptions();
    private boolean hasBias = true;

    @Override
    public MaskedWeightOptions maskedWeightOptions() {
      return weights;
    }

    public Builder hasBias(boolean hasBias) {
      this.hasBias = hasBias;
      return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public SparseDenseLayer build() {
      weights.resolve(layerName, nIn, nOut);
      return new SparseDenseLayer(this);
    }
  }
}
