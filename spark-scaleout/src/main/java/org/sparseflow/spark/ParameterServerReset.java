package org.sparseflow.spark;

import java.util.Iterator;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.nd4j.linalg.dataset.DataSet;

/**
 * Gradient sharing: restarts an executor's parameter-server node once per MST interval, before
 * dl4j-spark's training function sees the partition.
 *
 * <p>{@code SparkMstTrainer} starts a fresh {@code SharedTrainingMaster} per interval (so topology
 * changes reach the executors), and the driver restarts the mesh root with it. The executors'
 * {@code ModelParameterServer} is a JVM singleton that dl4j-spark M2 initialises only once, so from
 * the second interval on it stayed attached to the old root and to the previous interval's update
 * consumer: measured on a one-host cluster, the mesh still showed 3 nodes but no executor received
 * a single update. Shutting it down makes {@code SharedTrainingWrapper} join the new root with the
 * new consumer. Runs when the partition's iterator is requested, which is before the training
 * function starts. {@link ParameterServerRelease} also ends the threads that the stopped node would
 * otherwise leave running.
 */
final class ParameterServerReset implements FlatMapFunction<Iterator<DataSet>, DataSet> {
  private static final long serialVersionUID = 1L;
  private static String current;

  private final String generation;

  ParameterServerReset(String generation) {
    this.generation = generation;
  }

  @Override
  public Iterator<DataSet> call(Iterator<DataSet> data) {
    ParameterServerRelease.deleteAeronDirectoriesOnShutdown(); // before this executor's transport
    String executor = MaskGuardListener.executorId();
    if (!executor.isEmpty() && executor.chars().allMatch(Character::isDigit)) {
      reset(generation);
    }
    return data;
  }

  private static synchronized void reset(String generation) {
    if (generation.equals(current)) {
      return;
    }
    current = generation;
    ParameterServerRelease.shutdown();
  }
}
