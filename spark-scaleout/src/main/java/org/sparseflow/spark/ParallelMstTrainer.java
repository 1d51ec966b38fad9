package org.sparseflow.spark;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.deeplearning4j.datasets.iterator.utilty.ListDataSetIterator;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.deeplearning4j.parallelism.ParallelWrapper;
import org.nd4j.linalg.dataset.DataSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.mst.core.MstConfig;

/**
 * Mixed Sparsity Training with DL4J's {@link ParallelWrapper} (several devices or cores of one
 * machine), with the same guarantees and the same driver-side loop as {@link SparkMstTrainer}: per
 * MST interval one {@code ParallelWrapper.fit} over {@code deltaT x workers} minibatches
 * (ParallelWrapper re-creates its replicas from the model at each fit, so the masks reach every
 * replica; replica 0 is the model itself), mask audit on every replica via {@link
 * MaskGuardListener}, then one topology update on the model from the averaged parameters and the
 * dense gradients of the interval's last minibatches.
 */
public final class ParallelMstTrainer extends IntervalMstTrainer<Model, ParallelMstTrainer> {
  private static final Logger LOG = LoggerFactory.getLogger(ParallelMstTrainer.class);

  private final int workers;
  private final int averagingFrequency;
  private final ParallelWrapper.TrainingMode mode;
  private int gradientBatches;

  /**
   * @param net network with SparseFlow sparse layers, trained in place
   * @param config MST config, total steps = synchronous steps (each consumes {@code workers}
   *     minibatches)
   * @param workers ParallelWrapper workers (>= 1)
   * @param averagingFrequency AVERAGING mode: average every n steps; must divide the MST deltaT
   * @param mode AVERAGING or SHARED_GRADIENTS
   */
  public ParallelMstTrainer(
      Model net,
      MstConfig config,
      int workers,
      int averagingFrequency,
      ParallelWrapper.TrainingMode mode) {
    this(net, new DriverMst(config), workers, averagingFrequency, mode);
  }

  private ParallelMstTrainer(
      Model net,
      DriverMst mst,
      int workers,
      int averagingFrequency,
      ParallelWrapper.TrainingMode mode) {
    super(net, mst, "pw-");
    if (workers < 1) {
      throw new IllegalArgumentException(
          "workers = " + workers + " is invalid; allowed: an integer >= 1");
    }
    if (mode != ParallelWrapper.TrainingMode.AVERAGING
        && mode != ParallelWrapper.TrainingMode.SHARED_GRADIENTS) {
      throw new IllegalArgumentException(
          "mode = " + mode + " is invalid; allowed: AVERAGING, SHARED_GRADIENTS");
    }
    if (averagingFrequency < 1 || mst.deltaT() % averagingFrequency != 0) {
      throw new IllegalArgumentException(
          "averagingFrequency = "
              + averagingFrequency
              + " is invalid; allowed: "
              + "a divisor of the MST deltaT "
              + mst.deltaT()
              + " (so replicas are averaged when the interval ends)");
    }
    this.workers = workers;
    this.averagingFrequency = averagingFrequency;
    this.mode = mode;
    this.gradientBatches = workers;
    mst.bind(net);
  }

  /**
   * Continues from a checkpoint directory written by this trainer (or by {@link SparkMstTrainer}).
   */
  public static ParallelMstTrainer resume(
      File dir, int workers, int averagingFrequency, ParallelWrapper.TrainingMode mode)
      throws IOException {
    ScaleOutCheckpoint c = ScaleOutCheckpoint.load(dir);
    return new ParallelMstTrainer(
            c.model(), DriverMst.resume(c.state()), workers, averagingFrequency, mode)
        .resumedFrom(dir);
  }

  /**
   * Minibatches (the interval's last ones) used for the dense gradient of a topology update;
   * default = workers.
   */
  public ParallelMstTrainer gradientBatches(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("gradientBatches = " + n + " is invalid; allowed: >= 1");
    }
    this.gradientBatches = n;
    return this;
  }

  private static Collection<TrainingListener> listenersOf(Model m) {
    Collection<TrainingListener> l =
        m instanceof MultiLayerNetwork
            ? ((MultiLayerNetwork) m).getListeners()
            : m instanceof ComputationGraph ? ((ComputationGraph) m).getListeners() : null;
    return l == null ? new ArrayList<>() : new ArrayList<>(l);
  }

  /**
   * Trains to the end of the MST schedule over {@code batches} (cycled, interval i from minibatch
   * i*deltaT*workers).
   */
  public Model fit(List<DataSet> batches) {
    if (batches == null || batches.isEmpty()) {
      throw new IllegalArgumentException("batches is empty; allowed: at least one minibatch");
    }
    int deltaT = mst.deltaT();
    int perInterval = deltaT * workers;
    int n = batches.size();
    int done = 0;
    try {
      for (int i = run.firstInterval(); run.runs(i, done); i++, done++) {
        List<DataSet> chunk = new ArrayList<>(perInterval);
        for (int k = 0; k < perInterval; k++) {
          chunk.add(batches.get((int) (((long) i * perInterval + k) % n)));
        }
        ParallelWrapper pw =
            new ParallelWrapper.Builder<>(net)
                .workers(workers)
                .averagingFrequency(averagingFrequency)
                .trainingMode(mode)
                .prefetchBuffer(0)
                .reportScoreAfterAveraging(false)
                .build();
        pw.setListeners(new MaskGuardListener(run.runId(), i, mst.digests(), 1));
        // replica 0 is the model itself and keeps the wrapper's listeners after fit: restore the
        // user's
        Collection<TrainingListener> own = listenersOf(net);
        try {
          pw.fit(new ListDataSetIterator<>(chunk, 1)); // one list element (a minibatch) per next()
        } finally {
          pw.shutdown();
          net.setListeners(own);
        }
        double score = net.score();
        List<DataSet> gradData =
            chunk.subList(Math.max(0, chunk.size() - gradientBatches), chunk.size());
        SparkMstTrainer.IntervalLog entry =
            run.end(
                net,
                i,
                deltaT,
                score,
                () ->
                    DenseGradients.local(
                        net, mst.core().config(), gradData.iterator(), gradientBatches),
                null);
        LOG.info("parallel-wrapper MST {}", entry);
        run.checkpointIfDue(net, i, done);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return net;
  }
}
