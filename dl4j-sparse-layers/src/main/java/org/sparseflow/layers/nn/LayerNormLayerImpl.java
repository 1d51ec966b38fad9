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
import org.nd4j.linalg.factory.Nd4j;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.sparseflow.ops.NativeAddress;

/** Implementation of {@link LayerNormLayer}. */
public class LayerNormLayerImpl extends BaseLayer<LayerNormLayer> {

    public LayerNormLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
        super(conf, dataType);
    }

    /*
     * Fused kernel: one pass over the input in whatever order and strides DL4J hands over (NCW activations arrive
     * 'c' or 'f', or as permuted views), statistics per (example, time step) over the n features. An earlier
     * version built this from ND4J ops (permute + dup to rows, mean, sub, mul, mean, pow, ...), about a dozen
     * full-size temporaries per call; on the gpt-mini step those copies were ~14% of a block-sparse training step.
     */

    /** Element access to a rank-2 [N, n] or rank-3 [B, n, T] array: base offset and strides, data as doubles. */
    private record View(double[] data, long base, long sB, long sC, long sT, int nB, int nC, int nT) {
        int idx(int b, int c, int t) {
            return (int) (base + b * sB + c * sC + t * sT);
        }
    }

    // Per-thread buffers, reused across calls: the arrays are 1-2 MB at gpt-mini size, and fresh ones per call were
    // G1 "humongous" allocations (a young GC every ~0.5 s in a training loop).
    private static final ThreadLocal<double[][]> BUFFERS = ThreadLocal.withInitial(() -> new double[3][0]);
    private static final ThreadLocal<float[][]> FLOATS = ThreadLocal.withInitial(() -> new float[1][0]);

    private static double[] buffer(int slot, int n) {
        double[][] b = BUFFERS.get();
        if (b[slot].length < n) b[slot] = new double[n];
        return b[slot];
    }

    private static float[] floats(int n) {
        float[][] f = FLOATS.get();
        if (f[0].length < n) f[0] = new float[n];
        return f[0];
    }

    /** The elements of {@code a} (any order, strides, view offset) copied into buffer {@code slot}. */
    private static View load(INDArray a, int slot) {
        if (a.dataType() != DataType.DOUBLE && a.dataType() != DataType.FLOAT) {
            return load(a.castTo(DataType.FLOAT), slot);
        }
        long[] st = a.stride();
        boolean r3 = a.rank() == 3;
        int nB = (int) a.size(0), nC = (int) a.size(1), nT = r3 ? (int) a.size(2) : 1;
        long sT = r3 ? st[2] : 0;
        int span = (int) (1 + (nB - 1) * st[0] + (nC - 1) * st[1] + (nT - 1) * sT);
        double[] d = buffer(slot, span);
        long addr = NativeAddress.of(a);
        if (a.dataType() == DataType.DOUBLE) {
            new DoublePointer() { { address = addr; } }.get(d, 0, span);
        } else {
            float[] f = floats(span);
            new FloatPointer() { { address = addr; } }.get(f, 0, span);
            for (int i = 0; i < span; i++) d[i] = f[i];
        }
        return new View(d, 0, st[0], st[1], sT, nB, nC, nT);
    }

    /** New 'c' array shaped as the input (current workspace) holding {@code values} laid out [b][c][t]. */
    private INDArray create(double[] values) {
        INDArray out = Nd4j.createUninitialized(dataType, input.shape(), 'c');
        int n = (int) out.length();
        long addr = NativeAddress.of(out);
        if (dataType == DataType.DOUBLE) {
            new DoublePointer() { { address = addr; } }.put(values, 0, n);
        } else if (dataType == DataType.FLOAT) {
            float[] f = floats(n);
            for (int i = 0; i < n; i++) f[i] = (float) values[i];
            new FloatPointer() { { address = addr; } }.put(f, 0, n);
        } else {
            out.assign(Nd4j.create(java.util.Arrays.copyOf(values, n), input.shape(), 'c').castTo(dataType));
        }
        return out;
    }

    /** Per-(b, t) mean and 1/sqrt(var + eps) of x over the features: [b * nT + t]. */
    private void stats(View x, double[] mean, double[] inv) {
        int nB = x.nB, nC = x.nC, nT = x.nT;
        double eps = layerConf().getEps();
        java.util.Arrays.fill(mean, 0);
        java.util.Arrays.fill(inv, 0);
        for (int b = 0; b < nB; b++) {
            int r = b * nT;
            for (int c = 0; c < nC; c++) {
                for (int t = 0; t < nT; t++) mean[r + t] += x.data[x.idx(b, c, t)];
            }
            for (int t = 0; t < nT; t++) mean[r + t] /= nC;
            for (int c = 0; c < nC; c++) {
                for (int t = 0; t < nT; t++) {
                    double d = x.data[x.idx(b, c, t)] - mean[r + t];
                    inv[r + t] += d * d;
                }
            }
            for (int t = 0; t < nT; t++) inv[r + t] = 1.0 / Math.sqrt(inv[r + t] / nC + eps);
        }
    }

    private View checkedInput() {
        long n = layerConf().getNIn();
        if ((input.rank() != 2 && input.rank() != 3) || input.size(1) != n) {
            throw new IllegalArgumentException(LayerValidation.where(layerConf().getLayerName()) + "input shape = "
                    + java.util.Arrays.toString(input.shape()) + " is not allowed; allowed: [minibatch, " + n
                    + "] or [minibatch, " + n + ", T]");
        }
        return load(input, 0);
    }

    @Override
    public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
        assertInputSet(false);
        View x = checkedInput();
        int nB = x.nB, nC = x.nC, nT = x.nT;
        double[] mean = new double[nB * nT], inv = new double[nB * nT];
        stats(x, mean, inv);
        double[] g = getParam("g").toDoubleVector(), bb = getParam("b").toDoubleVector();
        double[] y = buffer(2, nB * nC * nT);
        for (int b = 0; b < nB; b++) {
            for (int c = 0; c < nC; c++) {
                int o = (b * nC + c) * nT, r = b * nT;
                for (int t = 0; t < nT; t++) {
                    y[o + t] = g[c] * (x.data[x.idx(b, c, t)] - mean[r + t]) * inv[r + t] + bb[c];
                }
            }
        }
        return mgr.leverageTo(ArrayType.ACTIVATIONS, create(y));
    }

    @Override
    public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
        assertInputSet(true);
        View x = checkedInput();
        if (!java.util.Arrays.equals(epsilon.shape(), input.shape())) {
            throw new IllegalArgumentException(LayerValidation.where(layerConf().getLayerName()) + "epsilon shape = "
                    + java.util.Arrays.toString(epsilon.shape()) + " is not allowed; allowed: the input shape "
                    + java.util.Arrays.toString(input.shape()));
        }
        View dy = load(epsilon, 1);
        int nB = x.nB, nC = x.nC, nT = x.nT;
        double[] mean = new double[nB * nT], inv = new double[nB * nT];
        stats(x, mean, inv);
        double[] g = getParam("g").toDoubleVector();
        double[] dg = new double[nC], db = new double[nC];
        // dx = inv / n * (n * dxhat - sum(dxhat) - xhat * sum(dxhat o xhat)), dxhat = dy o g, sums over features
        double[] sumD = new double[nB * nT], sumDX = new double[nB * nT];
        for (int b = 0; b < nB; b++) {
            int r = b * nT;
            for (int c = 0; c < nC; c++) {
                for (int t = 0; t < nT; t++) {
                    double d = dy.data[dy.idx(b, c, t)];
                    double xhat = (x.data[x.idx(b, c, t)] - mean[r + t]) * inv[r + t];
                    dg[c] += d * xhat;
                    db[c] += d;
                    double dxhat = d * g[c];
                    sumD[r + t] += dxhat;
                    sumDX[r + t] += dxhat * xhat;
                }
            }
        }
        double[] dx = buffer(2, nB * nC * nT);
        for (int b = 0; b < nB; b++) {
            int r = b * nT;
            for (int c = 0; c < nC; c++) {
                int o = (b * nC + c) * nT;
                for (int t = 0; t < nT; t++) {
                    double xhat = (x.data[x.idx(b, c, t)] - mean[r + t]) * inv[r + t];
                    double dxhat = dy.data[dy.idx(b, c, t)] * g[c];
                    dx[o + t] = inv[r + t] / nC * (nC * dxhat - sumD[r + t] - xhat * sumDX[r + t]);
                }
            }
        }
        gradientViews.get("g").assign(Nd4j.createFromArray(dg).castTo(dataType).reshape(gradientViews.get("g").shape()));
        gradientViews.get("b").assign(Nd4j.createFromArray(db).castTo(dataType).reshape(gradientViews.get("b").shape()));
        Gradient grad = new DefaultGradient();
        grad.gradientForVariable().put("g", gradientViews.get("g"));
        grad.gradientForVariable().put("b", gradientViews.get("b"));
        return new Pair<>(grad, mgr.leverageTo(ArrayType.ACTIVATION_GRAD, create(dx)));
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
