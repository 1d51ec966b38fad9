package org.sparseflow.layers.nn;

import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.ParamInitializer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.BaseOutputLayer;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.linalg.lossfunctions.ILossFunction;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.nd4j.shade.jackson.annotation.JsonIgnore;

/**
 * Sparse output layer: like DL4J's OutputLayer (2d input and labels, any loss function) with a
 * masked weight. Params "W" [nIn, nOut], "b" (if hasBias) and the frozen 0/1 mask "M"; see {@link
 * SparseDenseLayer}.
 */
public class SparseOutputLayer extends BaseOutputLayer implements MaskedLinearConf {
  private static final long serialVersionUID = 1L;

  // not a JSON property itself: the bean accessors of MaskedLinearConf (getPattern, setPattern,
  // ...)
  // keep the flat keys pattern, density, storage and blockLayout
  @JsonIgnore private MaskedWeightSettings maskedWeights = new MaskedWeightSettings();

  /** Jackson. */
  public SparseOutputLayer() {}

  protected SparseOutputLayer(Builder b) {
    super(b);
    this.maskedWeights = b.weights.settings();
    initializeConstraints(b);
  }

  @Override
  public Layer instantiate(
      NeuralNetConfiguration conf,
      Collection<TrainingListener> listeners,
      int layerIndex,
      INDArray paramsView,
      boolean initializeParams,
      DataType dataType) {
    return LayerConfSupport.instantiate(
        new SparseOutputLayerImpl(conf, dataType),
        initializer(),
        conf,
        listeners,
        layerIndex,
        paramsView,
        initializeParams);
  }

  @Override
  public ParamInitializer initializer() {
    return SparseFlowParamInitializer.getInstance();
  }

  @Override
  public IUpdater getUpdaterByParam(String paramName) {
    return LayerConfSupport.updater(this, paramName, super::getUpdaterByParam);
  }

  @Override
  public List<Regularization> getRegularizationByParam(String paramName) {
    return LayerConfSupport.regularization(this, paramName, super::getRegularizationByParam);
  }

  @Override
  public MaskedWeightSettings maskedWeights() {
    return maskedWeights;
  }

  @Override
  public SparseOutputLayer clone() {
    SparseOutputLayer c = (SparseOutputLayer) super.clone();
    c.maskedWeights = maskedWeights.copy();
    return c;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof SparseOutputLayer) || !super.equals(o)) {
      return false;
    }
    SparseOutputLayer that = (SparseOutputLayer) o;
    return maskedWeights.equals(that.maskedWeights);
  }

  @Override
  public int hashCode() {
    return Objects.hash(super.hashCode(), maskedWeights);
  }

  @Override
  public String toString() {
    return "SparseOutputLayer(name="
        + getLayerName()
        + ", nIn="
        + nIn
        + ", nOut="
        + nOut
        + ", "
        + maskedWeights.describe()
        + ", loss="
        + lossFn
        + ")";
  }

  /** Builder in DL4J style. */
  // DL4J's Layer.Builder declares a generic <E extends Layer> E build(); javac reports the concrete
  // override, which gives callers the layer's own type, as an unchecked conversion on the class.
  @SuppressWarnings("unchecked")
  public static class Builder extends BaseOutputLayer.Builder<Builder>
      implements MaskedWeightBuilder<Builder> {
    private final MaskedWeightOptions weights = new MaskedWeightOptions();

    /** MCXENT loss with softmax activation unless set otherwise. */
    public Builder() {
      this.lossFn = LossFunctions.LossFunction.MCXENT.getILossFunction();
      this.activationFn = Activation.SOFTMAX.getActivationFunction();
    }

    public Builder(LossFunctions.LossFunction loss) {
      super(loss);
    }

    public Builder(ILossFunction loss) {
      super(loss);
    }

    @Override
    public MaskedWeightOptions maskedWeightOptions() {
      return weights;
    }

    @Override
    @SuppressWarnings("unchecked")
    public SparseOutputLayer build() {
      weights.resolve(layerName, nIn, nOut);
      return new SparseOutputLayer(this);
    }
  }
}
