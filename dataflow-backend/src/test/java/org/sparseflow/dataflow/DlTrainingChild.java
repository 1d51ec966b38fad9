package org.sparseflow.dataflow;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.weights.WeightInit;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.dataflow.backend.DataflowTrainingListener;
import org.sparseflow.dataflow.backend.OpRecorder;
import org.sparseflow.dataflow.backend.RecordedOp;
import org.sparseflow.dataflow.backend.Recording;
import org.sparseflow.dataflow.capture.TraceCapture;
import org.sparseflow.dataflow.graph.OpGraph;
import org.sparseflow.dataflow.hw.ChipSpec;
import org.sparseflow.dataflow.sim.DataflowSimulator;
import org.sparseflow.dataflow.sim.ExecutionMode;

/**
 * Child JVM for {@link DataflowBackendTest}: trains a small DL4J network with a fixed seed and
 * prints the backend, a hash of the final parameters, what was recorded and the simulated step of
 * one iteration.
 */
public final class DlTrainingChild {
  public static void main(String[] args) throws Exception {
    int iterations = Integer.parseInt(args[0]);
    Nd4j.getRandom().setSeed(7);
    MultiLayerConfiguration conf =
        new NeuralNetConfiguration.Builder()
            .seed(42)
            .dataType(DataType.FLOAT)
            .updater(new Adam(1e-2))
            .weightInit(WeightInit.XAVIER)
            .list()
            .layer(new DenseLayer.Builder().nIn(16).nOut(32).activation(Activation.TANH).build())
            .layer(new DenseLayer.Builder().nIn(32).nOut(32).activation(Activation.RELU).build())
            .layer(
                new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                    .nIn(32)
                    .nOut(4)
                    .activation(Activation.SOFTMAX)
                    .build())
            .build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    net.setListeners(new DataflowTrainingListener());
    INDArray x = Nd4j.rand(DataType.FLOAT, 64, 16);
    INDArray y = Nd4j.zeros(DataType.FLOAT, 64, 4);
    for (int i = 0; i < 64; i++) {
      y.putScalar(i, i % 4, 1.0);
    }
    DataSet ds = new DataSet(x, y);
    net.fit(ds); // warm-up iteration
    long t0 = System.nanoTime();
    for (int i = 1; i < iterations; i++) {
      net.fit(ds);
    }
    double fitMs = (System.nanoTime() - t0) / 1e6;
    INDArray p = net.params().castTo(DataType.FLOAT).dup();
    ByteBuffer bb = ByteBuffer.allocate((int) p.length() * 4);
    for (long i = 0; i < p.length(); i++) {
      bb.putFloat(p.getFloat(i));
    }
    byte[] hash = MessageDigest.getInstance("SHA-256").digest(bb.array());
    StringBuilder hex = new StringBuilder();
    for (byte b : hash) {
      hex.append(String.format("%02x", b));
    }
    System.out.println("BACKEND " + Nd4j.getBackend().getClass().getName());
    System.out.println("EXECUTIONER " + Nd4j.getExecutioner().getClass().getName());
    System.out.println("PARAMS " + hex);
    System.out.println(String.format(Locale.ROOT, "FITMS %.3f", fitMs));
    OpRecorder rec = OpRecorder.global();
    List<Integer> its = rec.iterations();
    // recording cost in isolation: record() on arrays of this network, into a throw-away iteration
    INDArray w = net.getLayer(1).getParam("W");
    List<INDArray> in = List.of(x, w), out = List.of(y);
    int n = 20000;
    int scratch = rec.nextIteration();
    long r0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      Recording.record("matmul", "custom", in, out, null);
    }
    double recordNs = (System.nanoTime() - r0) / (double) n;
    System.out.println(String.format(Locale.ROOT, "RECORDNS %.1f", recordNs));
    System.out.println("ITERATIONS " + its);
    if (its.size() >= 2) {
      int it = its.get(its.size() - 2); // last complete iteration
      List<RecordedOp> ops = rec.iteration(it);
      System.out.println("RECORDED " + ops.size());
      OpGraph g = TraceCapture.fromRecords("dl4j-mlp", ops);
      double ms =
          new DataflowSimulator(ChipSpec.builtin("sn30"))
              .simulate(g, ExecutionMode.DATAFLOW, 0)
              .stepMillis();
      System.out.println(String.format(Locale.ROOT, "SIMSTEP %.6f", ms));
      System.out.println(
          "MATMULS "
              + ops.stream()
                  .filter(o -> o.opName().equals("matmul") || o.opName().equals("mmul"))
                  .count());
    } else {
      System.out.println("RECORDED 0");
    }
  }
}
