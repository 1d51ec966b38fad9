package org.sparseflow.layers.nn;

import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
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
    implements MaskedLinearLayer {
  private static final long serialVersionUID = 1L;

  private final MaskedWeights masked = new MaskedWeights(List.of("W"), List.of("M"));

  public SparseOutputLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
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
    INDArray z = linearForward(input.castTo(dataType));
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
    INDArray dx = linearBackward(input.castTo(dataType), delta, layerConf().hasBias());
    Gradient g = collectGradients(conf.variables());
    this.gradient = g;
    weightNoiseParams.clear();
    return new Pair<>(g, backpropDropOutIfPresent(mgr.leverageTo(ArrayType.ACTIVATION_GRAD, dx)));
  }

  @Override
  public void applyConstraints(int iteration, int epoch) {
    super.applyConstraints(iteration, epoch);
    applyMasks();
  }

  // ---------------------------------------------------------------- MaskedLinearLayer

  @Override
  public MaskedWeights masked() {
    return masked;
  }

  @Override
  public Map<String, INDArray> gradientViewMap() {
    return gradientViews;
  }
}
