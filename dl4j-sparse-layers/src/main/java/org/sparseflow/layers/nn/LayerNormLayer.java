package org.sparseflow.layers.nn;

import java.util.List;
import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.nd4j.linalg.api.buffer.DataType;

/**
 * Layer normalisation over the feature dimension (Ba et al. 2016, arXiv 1607.06450), which DL4J
 * M2.1 only offers fused into DenseLayer: y = g o (x - mean) / sqrt(var + eps) + b, per example and
 * time step. Input [minibatch, n] or recurrent [minibatch, n, T] (NCW, the default) or [minibatch,
 * T, n] ({@code dataFormat(NWC)}, taken from a recurrent input type when one is set); output has
 * the input's shape. Params "g" (gain, initialised to 1) and "b" (bias, biasInit), both [1, n];
 * both use the bias regularization.
 */
public class LayerNormLayer extends SparseFlowFeedForwardLayer {
  private static final long serialVersionUID = 1L;

  private double eps = 1e-5;
  private RNNFormat dataFormat = RNNFormat.NCW;

  /** Jackson. */
  public LayerNormLayer() {}

  protected LayerNormLayer(Builder b) {
    super(b);
    this.eps = b.eps;
    this.dataFormat = b.dataFormat;
    if (nIn > 0) {
      nOut = nIn;
    }
    initializeConstraints(b);
  }

  @Override
  public List<ParamSpec> paramSpecs() {
    return List.of(ParamSpec.gain("g", nIn), ParamSpec.bias("b", nIn));
  }

  @Override
  Layer newImplementation(NeuralNetConfiguration conf, DataType dataType) {
    LayerValidation.checkPositive(getLayerName(), "nIn", nIn);
    return new LayerNormLayerImpl(conf, dataType);
  }

  @Override
  public InputType getOutputType(int layerIndex, InputType inputType) {
    check(inputType);
    return inputType;
  }

  @Override
  public void setNIn(InputType inputType, boolean override) {
    check(inputType);
    if (nIn <= 0 || override) {
      nIn =
          inputType.getType() == InputType.Type.RNN
              ? ((InputType.InputTypeRecurrent) inputType).getSize()
              : ((InputType.InputTypeFeedForward) inputType).getSize();
    }
    if (inputType.getType() == InputType.Type.RNN) {
      dataFormat = ((InputType.InputTypeRecurrent) inputType).getFormat();
    }
    nOut = nIn;
  }

  private void check(InputType t) {
    if (t == null || (t.getType() != InputType.Type.RNN && t.getType() != InputType.Type.FF)) {
      throw new IllegalArgumentException(
          LayerValidation.where(getLayerName())
              + "input type = "
              + t
              + " is not allowed; allowed: feed-forward [minibatch, n] or recurrent [minibatch, n,"
              + " T]");
    }
  }

  @Override
  public InputPreProcessor getPreProcessorForInputType(InputType inputType) {
    return null;
  }

  /** Always: the shift b is the bias. */
  @Override
  public boolean hasBias() {
    return true;
  }

  public double getEps() {
    return eps;
  }

  public void setEps(double eps) {
    this.eps = eps;
  }

  /** Layout of recurrent input: NCW [minibatch, n, T] or NWC [minibatch, T, n]. */
  public RNNFormat getDataFormat() {
    return dataFormat;
  }

  public void setDataFormat(RNNFormat dataFormat) {
    this.dataFormat = dataFormat;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof LayerNormLayer) || !super.equals(o)) {
      return false;
    }
    return Double.compare(eps, ((LayerNormLayer) o).eps) == 0
        && dataFormat == ((LayerNormLayer) o).dataFormat;
  }

  @Override
  public int hashCode() {
    return Objects.hash(super.hashCode(), eps, dataFormat);
  }

  @Override
  public String toString() {
    return "LayerNormLayer(name="
        + getLayerName()
        + ", n="
        + nIn
        + ", eps="
        + eps
        + ", dataFormat="
        + dataFormat
        + ")";
  }

  /** Builder; nIn may come from setInputType. nOut always equals nIn. */
  // DL4J's Layer.Builder declares a generic <E extends Layer> E build(); javac reports the concrete
  // override, which gives callers the layer's own type, as an unchecked conversion on the class.
  @SuppressWarnings("unchecked")
  public static class Builder extends RecurrentLayerBuilder<Builder> {
    private double eps = 1e-5;

    /** Added to the variance for numerical stability; > 0. */
    public Builder eps(double eps) {
      this.eps = eps;
      return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public LayerNormLayer build() {
      if (!(eps > 0) || Double.isInfinite(eps)) {
        throw new IllegalArgumentException(
            LayerValidation.where(layerName)
                + "eps = "
                + eps
                + " is not allowed; allowed: a finite value > 0");
      }
      if (nOut > 0 && nIn > 0 && nOut != nIn) {
        throw new IllegalArgumentException(
            LayerValidation.where(layerName)
                + "nOut = "
                + nOut
                + " differs from nIn = "
                + nIn
                + "; allowed: nOut = nIn (or leave nOut unset)");
      }
      return new LayerNormLayer(this);
    }
  }
}
