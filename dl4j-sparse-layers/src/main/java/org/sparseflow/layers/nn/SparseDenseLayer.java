package org.sparseflow.layers.nn;

import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.ParamInitializer;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.layers.InputTypeUtil;
import org.deeplearning4j.nn.conf.memory.LayerMemoryReport;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.regularization.Regularization;

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
public class SparseDenseLayer extends FeedForwardLayer implements MaskedLinearConf {
  private static final long serialVersionUID = 1L;

  private String pattern = "unstructured";
  private double density = 1.0;
  private String storage = PackedStorage.MASKED;
  private int[] blockLayout;
  private boolean hasBias = true;

  /** Jackson. */
  public SparseDenseLayer() {}

  protected SparseDenseLayer(Builder b) {
    super(b);
    this.pattern = b.weights.pattern;
    this.density = b.weights.density;
    this.storage = b.weights.storage;
    this.blockLayout = b.weights.blockLayout;
    this.hasBias = b.hasBias;
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
        new SparseDenseLayerImpl(conf, dataType),
        initializer(),
        conf,
        listeners,
        layerIndex,
        paramsView,
        initializeParams);
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
  public ParamInitializer initializer() {
    return SparseFlowParamInitializer.getInstance();
  }

  @Override
  public IUpdater getUpdaterByParam(String paramName) {
    return LayerConfSupport.isMask(this, paramName)
        ? LayerConfSupport.FROZEN
        : super.getUpdaterByParam(paramName);
  }

  @Override
  public List<Regularization> getRegularizationByParam(String paramName) {
    return LayerConfSupport.isMask(this, paramName)
        ? LayerConfSupport.noRegularization()
        : super.getRegularizationByParam(paramName);
  }

  @Override
  public LayerMemoryReport getMemoryReport(InputType inputType) {
    return LayerConfSupport.memoryReport(
        this, SparseDenseLayer.class, inputType, initializer().numParams(this));
  }

  public String getPattern() {
    return pattern;
  }

  public void setPattern(String pattern) {
    this.pattern = pattern;
  }

  public double getDensity() {
    return density;
  }

  /** {@code masked} (default) or {@code packed}: see {@link PackedStorage}. */
  @Override
  public String getStorage() {
    return storage;
  }

  public void setStorage(String storage) {
    this.storage = storage;
  }

  /** Row-major indices of the kept blocks when storage = packed, else null. */
  @Override
  public int[] getBlockLayout() {
    return blockLayout == null ? null : blockLayout.clone();
  }

  public void setBlockLayout(int[] blockLayout) {
    this.blockLayout = blockLayout == null ? null : blockLayout.clone();
  }

  public void setDensity(double density) {
    this.density = density;
  }

  public boolean isHasBias() {
    return hasBias;
  }

  public void setHasBias(boolean hasBias) {
    this.hasBias = hasBias;
  }

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
    return Double.compare(density, that.density) == 0
        && Objects.equals(storage, that.storage)
        && Arrays.equals(blockLayout, that.blockLayout)
        && hasBias == that.hasBias
        && Objects.equals(pattern, that.pattern);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(blockLayout)
        + Objects.hash(super.hashCode(), pattern, density, storage, hasBias);
  }

  @Override
  public String toString() {
    return "SparseDenseLayer(name="
        + getLayerName()
        + ", nIn="
        + nIn
        + ", nOut="
        + nOut
        + ", pattern="
        + pattern
        + ", density="
        + density
        + ", storage="
        + storage
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
