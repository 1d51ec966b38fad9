package org.sparseflow.spark;

import java.util.ArrayList;
import java.util.List;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.nd4j.linalg.schedule.ExponentialSchedule;
import org.nd4j.linalg.schedule.ScheduleType;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.nn.SparseOutputLayer;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;

/**
 * Shared test setup: a small sparse MLP, teacher-generated data, an MST config and the
 * single-machine reference.
 */
final class ScaleOutFixtures {
  static final int IN = 16;
  static final int HIDDEN = 48;
  static final int CLASSES = 4;
  static final int BATCH = 16;

  private ScaleOutFixtures() {}

  static MultiLayerNetwork sparseMlp(long seed) {
    return sparseMlp(seed, new Adam(1e-2));
  }

  static MultiLayerNetwork sparseMlp(long seed, IUpdater updater) {
    MultiLayerNetwork net =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(seed)
                .dataType(DataType.FLOAT)
                .updater(updater)
                .list()
                .layer(
                    new SparseDenseLayer.Builder()
                        .nIn(IN)
                        .nOut(HIDDEN)
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new SparseDenseLayer.Builder()
                        .nIn(HIDDEN)
                        .nOut(HIDDEN)
                        .activation(Activation.TANH)
                        .build())
                .layer(
                    new SparseOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                        .nIn(HIDDEN)
                        .nOut(CLASSES)
                        .activation(Activation.SOFTMAX)
                        .build())
                .build());
    net.init();
    return net;
  }

  /**
   * MST preset "mst" (3 phases, mixed growth) shortened: deltaT steps per interval, intervals *
   * deltaT steps.
   */
  static MstConfig mst(int deltaT, int intervals) {
    MstConfig c = MstConfig.preset("mst");
    c.setDeltaT(deltaT);
    c.getSchedule().setUltraSparsity(0.8);
    c.getSchedule().setFinalSparsity(0.6);
    c.getSchedule().setWarmupEnd(0.3);
    c.getSchedule().setRestorationStart(0.7);
    return c.withTotalSteps((long) deltaT * intervals);
  }

  /**
   * Adam whose learning rate decays exponentially from {@code lr} to {@code lr / 10} over {@code
   * steps} optimizer steps. The schedule follows DL4J's iteration count, which parameter averaging
   * keeps in step with the single-machine run (every averaging split adds averagingFrequency to the
   * driver's count), so both runs use the same learning rate at every step.
   */
  static IUpdater decayingAdam(double lr, long steps) {
    return new Adam(
        new ExponentialSchedule(ScheduleType.ITERATION, lr, Math.pow(0.1, 1.0 / steps)));
  }

  /**
   * Minibatches labelled by a fixed random teacher network (learnable, not trivially separable).
   */
  static List<DataSet> teacherData(int batches, long seed) {
    Nd4j.getRandom().setSeed(1234);
    INDArray w1 = Nd4j.randn(DataType.FLOAT, IN, 24);
    INDArray w2 = Nd4j.randn(DataType.FLOAT, 24, CLASSES);
    Nd4j.getRandom().setSeed(seed);
    List<DataSet> out = new ArrayList<>();
    for (int b = 0; b < batches; b++) {
      INDArray x = Nd4j.randn(DataType.FLOAT, BATCH, IN);
      INDArray logits = Nd4j.math().tanh(x.mmul(w1)).mmul(w2);
      INDArray idx = logits.argMax(1);
      INDArray y = Nd4j.zeros(DataType.FLOAT, BATCH, CLASSES);
      for (int r = 0; r < BATCH; r++) {
        y.putScalar(r, idx.getInt(r), 1f);
      }
      out.add(new DataSet(x, y));
    }
    return out;
  }

  static DataSet merge(List<DataSet> l) {
    return DataSet.merge(l);
  }

  /**
   * Single-machine MST run on the same samples: step s trains on the minibatches the distributed
   * run gives its workers in that step (merged), so both runs see the same data per step and the
   * same MST schedule.
   */
  static MultiLayerNetwork singleMachine(
      MstConfig config, List<DataSet> batches, int workers, long seed) {
    return singleMachine(sparseMlp(seed), config, batches, workers);
  }

  static MultiLayerNetwork singleMachine(
      MultiLayerNetwork net, MstConfig config, List<DataSet> batches, int workers) {
    MstListener mst = new MstListener(config);
    net.setListeners(mst);
    long steps = config.getSchedule().getTotalSteps();
    int n = batches.size();
    for (long s = 0; s < steps; s++) {
      List<DataSet> step = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        step.add(batches.get((int) ((s * workers + w) % n)));
      }
      net.fit(merge(step));
    }
    return net;
  }

  static double relDiff(double a, double ref) {
    return Math.abs(a - ref) / Math.abs(ref);
  }
}
