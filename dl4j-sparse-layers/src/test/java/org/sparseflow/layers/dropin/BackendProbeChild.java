package org.sparseflow.layers.dropin;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.weights.WeightInit;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * Child JVM for {@link BackendSwitchTest}: trains a stock DL4J MLP (no SparseFlow API call) and
 * prints a digest of its parameters, then builds a SparseFlow sparse matmul in SameDiff and prints
 * its difference from the dense reference. Lines are {@code KEY value}.
 */
public final class BackendProbeChild {

  private BackendProbeChild() {}

  public static void main(String[] args) throws Exception {
    System.out.println("BACKEND " + Nd4j.getBackend().getClass().getName());
    System.out.println("EXEC " + Nd4j.getExecutioner().getClass().getName());
    System.out.println("PARAMS " + digest(trainStockMlp()));
    System.out.println("STOCKDONE 1");
    sparseMatmul();
  }

  private static INDArray trainStockMlp() {
    MultiLayerConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(42)
            .dataType(DataType.DOUBLE)
            .updater(new Adam(1e-2))
            .weightInit(WeightInit.XAVIER)
            .list()
            .layer(new DenseLayer.Builder().nIn(12).nOut(32).activation(Activation.RELU).build())
            .layer(
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(4)
                    .activation(Activation.SOFTMAX)
                    .build())
            .build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    Nd4j.getRandom().setSeed(7);
    INDArray x = Nd4j.rand(DataType.DOUBLE, 64, 12);
    INDArray y = Nd4j.zeros(DataType.DOUBLE, 64, 4);
    for (int i = 0; i < 64; i++) {
      y.putScalar(i, i % 4, 1.0);
    }
    for (int i = 0; i < 25; i++) {
      net.fit(x, y);
    }
    return net.params();
  }

  private static void sparseMatmul() {
    SparseMask mask = PatternSpec.parse("block8").random(16, 24, 0.5, 3);
    Nd4j.getRandom().setSeed(11);
    INDArray xa = Nd4j.rand(DataType.DOUBLE, 5, 16);
    INDArray wa = Nd4j.rand(DataType.DOUBLE, 16, 24);
    INDArray m = mask.toDense(DataType.DOUBLE);
    SameDiff sd = SameDiff.create();
    SDVariable x = sd.placeHolder("x", DataType.DOUBLE, -1, 16);
    SDVariable w = sd.var("w", wa.dup());
    SDVariable y = SparseFlowOps.sparseMatmul(sd, x, w, mask);
    sd.sum("loss", y);
    sd.setLossVariables("loss");
    INDArray out = sd.output(Map.of("x", xa), y.name()).get(y.name());
    INDArray grad = sd.calculateGradients(Map.of("x", xa), "w").get("w");
    INDArray refOut = xa.mmul(wa.mul(m));
    INDArray refGrad = xa.transpose().mmul(Nd4j.ones(DataType.DOUBLE, 5, 24)).mul(m);
    System.out.println("SDOUTDIFF " + out.sub(refOut).amaxNumber().doubleValue());
    System.out.println("SDGRADDIFF " + grad.sub(refGrad).amaxNumber().doubleValue());
    boolean sparseOp =
        sd.getOps().values().stream().anyMatch(o -> o.getOp().opName().startsWith("sparseflow_"));
    System.out.println("SDSPARSEOP " + sparseOp);
  }

  private static String digest(INDArray a) throws Exception {
    double[] v = a.dup().data().asDouble();
    ByteBuffer bb = ByteBuffer.allocate(v.length * 8);
    for (double d : v) {
      bb.putLong(Double.doubleToRawLongBits(d));
    }
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bb.array()));
  }
}
