package org.sparseflow.spark;

import java.util.List;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.spark.job.TeacherMlp;

/**
 * Shared test setup: a small sparse MLP, teacher-generated data, an MST config and the
 * single-machine reference.
 */
final class ScaleOutFixtures {
  static final int IN = TeacherMlp.IN;
  static final int HIDDEN = TeacherMlp.HIDDEN;
  static final int CLASSES = TeacherMlp.CLASSES;
  static final int BATCH = TeacherMlp.BATCH;

  private ScaleOutFixtures() {}

  static MultiLayerNetwork sparseMlp(long seed) {
    return sparseMlp(seed, new Adam(1e-2));
  }

  static MultiLayerNetwork sparseMlp(long seed, IUpdater updater) {
    return TeacherMlp.sparseMlp(seed, updater);
  }

  /** See {@link TeacherMlp#mst}. */
  static MstConfig mst(int deltaT, int intervals) {
    return TeacherMlp.mst(deltaT, intervals);
  }

  /** See {@link TeacherMlp#decayingAdam}. */
  static IUpdater decayingAdam(double lr, long steps) {
    return TeacherMlp.decayingAdam(lr, steps);
  }

  static List<DataSet> teacherData(int batches, long seed) {
    return TeacherMlp.teacherData(batches, seed);
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
    return TeacherMlp.singleMachine(net, config, batches, workers);
  }

  static double relDiff(double a, double ref) {
    return Math.abs(a - ref) / Math.abs(ref);
  }
}
