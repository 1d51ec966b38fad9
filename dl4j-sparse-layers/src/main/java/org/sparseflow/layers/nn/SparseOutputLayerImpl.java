package org.sparseflow.layers.nn;

import java.util.List;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.layers.BaseOutputLayer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.lossfunctions.ILossFunction;

/** Implementation of {@link SparseOutputLayer}. */
public class SparseOutputLayerImpl extends BaseOutputLayer<SparseOutputLayer>
    implements SparseWeightLayer {

  private final MaskedWeights masked = new MaskedWeights(List.of("W"), List.of("M"));

  public SparseOutputLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  private org.sparseflow.ops.pattern.SparseMask mask() {
    return masked.sparseMask("W", getParam("M"), layerConf().getPattern());
  }

  private INDArray bias() {
    return layerConf().hasBias() ? getParam("b") : null;
  }

  @Override
  protected INDArray preOutput(boolean training, LayerWorkspaceMgr mgr) {
    assertInputSet(false);
    applyDropOutIfNecessary(training, mgr);
    if (input.rank() != 2) {
      throw new IllegalArgumentException(
          "layer '"
              + layerConf().getLayerName()
              + "' (SparseOutputLayer): input rank = "
              + input.rank()
              + "; allowed: rank 2 [minibatch, nIn]");
    }
    INDArray z = SparseKernels.linearForward(input.castTo(dataType), getParam("W"), bias(), mask());
    return mgr.leverageTo(ArrayType.ACTIVATIONS, z);
  }

  @Override
  protected INDArray getLabels2d(LayerWorkspaceMgr mgr, ArrayType arrayType) {
    return labels;
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
    assertInputSet(true);
    INDArray preOut = preOutput2d(true, mgr);
    ILossFunction loss = layerConf().getLossFn();
    INDArray labels2d = getLabels2d(mgr, ArrayType.BP_WORKING_MEM);
    INDArray delta =
        loss.computeGradient(labels2d, preOut, layerConf().getActivationFn(), maskArray);
    INDArray dx =
        SparseKernels.linearBackward(
            input.castTo(dataType),
            getParam("W"),
            mask(),
            delta,
            gradientViews.get("W"),
            layerConf().hasBias() ? gradientViews.get("b") : null,
            masked.denseBuffer("W", getParam("W")));
    gradientViews.get("M").assign(0);
    Gradient g = new DefaultGradient();
    for (String k : conf.variables()) {
      g.gradientForVariable().put(k, gradientViews.get(k));
    }
    this.gradient = g;
    weightNoiseParams.clear();
    return new Pair<>(g, backpropDropOutIfPresent(mgr.leverageTo(ArrayType.ACTIVATION_GRAD, dx)));
  }

  @Override
  public void applyConstraints(int iteration, int epoch) {
    super.applyConstraints(iteration, epoch);
    applyMasks();
  }

  // ---------------------------------------------------------------- SparseWeightLayer

  @Override
  public List<String> sparseWeightKeys() {
    return masked.weightKeys();
  }

  @Override
  public String maskKey(String weightKey) {
    return masked.maskKey(weightKey);
  }

  @Override
  public String pattern(String weightKey) {
    masked.maskKey(weightKey);
    return layerConf().getPattern();
  }

  @Override
  public void setDenseGradientRequested(boolean requested) {
    masked.setDenseRequested(requested);
  }

  @Override
  public boolean isDenseGradientRequested() {
    return masked.isDenseRequested();
  }

  @Override
  public INDArray lastWeightGradient(String weightKey) {
    return masked.lastGradient(weightKey, gradientViews);
  }

  @Override
  public void applyMasks() {
    masked.apply(this::getParam);
  }
}
