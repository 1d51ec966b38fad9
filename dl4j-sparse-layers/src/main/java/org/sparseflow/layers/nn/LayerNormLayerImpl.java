package org.sparseflow.layers.nn;

import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.layers.BaseLayer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.ops.transforms.Transforms;

/** Implementation of {@link LayerNormLayer}. */
public class LayerNormLayerImpl extends BaseLayer<LayerNormLayer> {

    public LayerNormLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
        super(conf, dataType);
    }

    /** Normalised rows [N, n] plus 1/sqrt(var + eps) [N, 1]. */
    private record Norm(INDArray xhat, INDArray inv) { }

    private INDArray rows() {
        long n = layerConf().getNIn();
        if ((input.rank() != 2 && input.rank() != 3) || input.size(1) != n) {
            throw new IllegalArgumentException(LayerValidation.where(layerConf().getLayerName()) + "input shape = "
                    + java.util.Arrays.toString(input.shape()) + " is not allowed; allowed: [minibatch, " + n
                    + "] or [minibatch, " + n + ", T]");
        }
        INDArray x = input.castTo(dataType);
        return input.rank() == 2 ? x : x.permute(0, 2, 1).dup('c').reshape('c', x.size(0) * x.size(2), n);
    }

    private INDArray back(INDArray r2) {
        if (input.rank() == 2) return r2;
        return r2.reshape('c', input.size(0), input.size(2), input.size(1)).permute(0, 2, 1).dup('f');
    }

    private Norm normalise(INDArray x2) {
        INDArray xc = x2.subColumnVector(x2.mean(true, 1));
        INDArray var = xc.mul(xc).mean(true, 1);
        INDArray inv = Transforms.pow(var.addi(layerConf().getEps()), -0.5, false);
        return new Norm(xc.muliColumnVector(inv), inv);
    }

    @Override
    public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
        assertInputSet(false);
        Norm nm = normalise(rows());
        INDArray y = nm.xhat.mulRowVector(getParam("g")).addiRowVector(getParam("b"));
        return mgr.leverageTo(ArrayType.ACTIVATIONS, back(y));
    }

    @Override
    public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
        assertInputSet(true);
        Norm nm = normalise(rows());
        INDArray dy;
        long n = layerConf().getNIn();
        if (epsilon.rank() == 3) {
            dy = epsilon.castTo(dataType).permute(0, 2, 1).dup('c').reshape('c', epsilon.size(0) * epsilon.size(2), n);
        } else {
            dy = epsilon.castTo(dataType);
        }
        gradientViews.get("g").assign(dy.mul(nm.xhat).sum(true, 0));
        gradientViews.get("b").assign(dy.sum(true, 0));
        // dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat o xhat)), dxhat = dy o g
        INDArray dxhat = dy.mulRowVector(getParam("g"));
        INDArray t1 = dxhat.mul(n).subiColumnVector(dxhat.sum(true, 1));
        INDArray t2 = nm.xhat.mulColumnVector(dxhat.mul(nm.xhat).sum(true, 1));
        INDArray dx = t1.subi(t2).muliColumnVector(nm.inv).divi(n);
        Gradient g = new DefaultGradient();
        g.gradientForVariable().put("g", gradientViews.get("g"));
        g.gradientForVariable().put("b", gradientViews.get("b"));
        return new Pair<>(g, mgr.leverageTo(ArrayType.ACTIVATION_GRAD, back(dx)));
    }

    @Override
    public boolean isPretrainLayer() {
        return false;
    }

    @Override
    public boolean hasBias() {
        return true;
    }
}
