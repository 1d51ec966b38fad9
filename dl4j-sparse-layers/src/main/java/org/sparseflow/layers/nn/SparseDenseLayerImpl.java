package org.sparseflow.layers.nn;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** Implementation of {@link SparseDenseLayer}. */
public class SparseDenseLayerImpl extends SparseFlowLayerImpl<SparseDenseLayer>
    implements MaskedLinearLayer {
  private static final long serialVersionUID = 1L;

  private final MaskedWeights masked = new MaskedWeights(List.of("W"), List.of("M"));

  /**
   * Pre-activation z of the training forward pass (and gelu(z) when GeluKernels apply, else null),
   * for backprop.
   */
  private record Fwd(INDArray z, INDArray gelu) {}

  private final ForwardCache<Fwd> cache = new ForwardCache<>();

  public SparseDenseLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  /** Input as rows [N, nIn]: rank 2 as is, recurrent [B, nIn, T] as [B*T, nIn]. */
  private INDArray inputRows() {
    long nIn = layerConf().getNIn();
    if ((input.rank() != 2 && input.rank() != 3) || input.size(1) != nIn) {
      throw new IllegalArgumentException(
          "layer '"
              + layerConf().getLayerName()
              + "' (SparseDenseLayer): input shape = "
              + Arrays.toString(input.shape())
              + " is not allowed; allowed: [minibatch, "
              + nIn
              + "] or recurrent [minibatch, "
              + nIn
              + ", T]");
    }
    INDArray x = input.castTo(dataType);
    return input.rank() == 2
        ? x
        : x.permute(0, 2, 1).dup('c').reshape('c', x.size(0) * x.size(2), nIn);
  }

  /** Rows [B*T, n] back to [B, n, T] when the input was recurrent. */
  private INDArray toInputLayout(INDArray rows) {
    if (input.rank() == 2) {
      return rows;
    }
    return rows.reshape('c', input.size(0), input.size(2), rows.size(1)).permute(0, 2, 1).dup('f');
  }

  @Override
  protected INDArray preOutput(boolean training, LayerWorkspaceMgr mgr) {
    startForward(training, mgr);
    return linearForward(inputRows());
  }

  @Override
  public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
    return activateCaching(training, mgr, cache, ws -> cachingForward(training, mgr, ws));
  }

  /**
   * The forward pass of {@link #activate} inside its workspace: the activations, and the state kept
   * for backprop when {@code ws} is open (training).
   */
  private INDArray cachingForward(boolean training, LayerWorkspaceMgr mgr, MemoryWorkspace ws) {
    INDArray a;
    INDArray z = preOutput(training, mgr);
    if (ws != null && GeluKernels.supports(layerConf().getActivationFn(), z.dataType())) {
      INDArray gelu = GeluKernels.forward(z);
      cache.put(input, new Fwd(z, gelu));
      // the next layer may overwrite its input in place (DL4J's input-modification optimisation)
      a = gelu.dup();
    } else if (ws != null) {
      cache.put(input, new Fwd(z, null));
      a =
          layerConf()
              .getActivationFn()
              .getActivation(z.dup(), training); // activations work in place
    } else {
      a = layerConf().getActivationFn().getActivation(z, training);
    }
    if (maskArray != null && input.rank() == 2) {
      applyMask(a);
    }
    return toInputLayout(a);
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
    assertInputSet(true);
    Fwd f = cache.take(input);
    INDArray z = f != null ? f.z() : preOutput(true, mgr);
    INDArray eps =
        epsilon.rank() == 3
            ? epsilon.castTo(dataType).permute(0, 2, 1).dup('c').reshape('c', z.size(0), z.size(1))
            : epsilon;
    // z's order depends on the path (block kernels: row-major, ND4J's masked mmul: column-major);
    // an epsilon in
    // the other order sends ND4J's element-wise activation backprop down its slow mixed-order path
    // (measured:
    // GELU backprop 3x slower), so match the orders first
    if (eps.ordering() != z.ordering()) {
      eps = eps.dup(z.ordering());
    }
    boolean fused = f != null && f.gelu() != null && maskArray == null;
    double[] biasGrad = fused && layerConf().hasBias() ? new double[(int) z.size(1)] : null;
    INDArray delta =
        fused
            ? GeluKernels.backward(z, f.gelu(), eps, biasGrad)
            : layerConf().getActivationFn().backprop(z, eps).getFirst();
    if (maskArray != null && input.rank() == 2) {
      applyMask(delta);
    }
    INDArray dx = linearBackward(inputRows(), delta, layerConf().hasBias() && biasGrad == null);
    if (biasGrad != null) { // summed by the fused GELU backward pass
      INDArray b = gradientViews.get("b");
      b.assign(Nd4j.createFromArray(biasGrad).castTo(b.dataType()).reshape(b.shape()));
    }
    Gradient g = collectGradients(conf.variables());
    weightNoiseParams.clear();
    return new Pair<>(
        g, backpropDropOutIfPresent(mgr.leverageTo(ArrayType.ACTIVATION_GRAD, toInputLayout(dx))));
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
