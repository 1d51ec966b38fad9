package org.sparseflow.spark.job;

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
 * The scale-out fixture: a sparse MLP (SparseDenseLayer 16-48-48, SparseOutputLayer 48-4) on data
 * labelled by a fixed random teacher network, the shortened MST preset and the single-machine
 * reference run on the same samples. Shared by the job and the module's tests.
 */
public final class TeacherMlp {
  public static final int IN = 16;
  public static final int HIDDEN = 48;
  public static final int CLASSES = 4;
  public static final int BATCH = 16;

  private TeacherMlp() {}

  public static MultiLayerNetwork sparseMlp(long seed, IUpdater updater) {
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
  public static MstConfig mst(int deltaT, int intervals) {
    MstConfig c = MstConfig.preset("mst");
    c.setDeltaT(deltaT);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
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
  public static IUpdater decayingAdam(double lr, long steps) {
    return new Adam(
        new ExponentialSchedule(ScheduleType.ITERATION, lr, Math.pow(0.1, 1.0 / steps)));
  }

  /**
   * Minibatches labelled by a fixed random teacher network (learnable, not trivially separable).
   */
  public static List<DataSet> teacherData(int batches, long seed) {
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

  /**
   * Single-machine MST run on the same samples: step s trains on the minibatches the distributed
   * run gives its workers in that step (merged), so both runs see the same data per step and the
   * same MST schedule.
   */
  public static MultiLayerNetwork singleMachine(
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
      net.fit(DataSet.merge(step));
    }
    return net;
  }
}
