package org.sparseflow.spark;

import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.spark.api.TrainingMaster;
import org.deeplearning4j.spark.impl.multilayer.SparkDl4jMultiLayer;
import org.deeplearning4j.spark.impl.paramavg.ParameterAveragingTrainingMaster;
import org.deeplearning4j.spark.parameterserver.training.SharedTrainingMaster;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.mst.core.MstConfig;
import scala.Tuple2;

/**
 * Mixed Sparsity Training on Apache Spark (dl4j-spark 1.0.0-M2) with one topology decision per
 * interval.
 *
 * <p>Design: a driver-side loop. Each MST update interval ({@code deltaT} worker steps) the driver
 *
 * <ol>
 *   <li>fits one chunk of the training RDD ({@code deltaT x numWorkers} minibatches) with a fresh
 *       TrainingMaster ({@code ParameterAveragingTrainingMaster} or {@code SharedTrainingMaster});
 *       the network's parameters, masks included, are broadcast to the workers at the start of the
 *       fit, and a {@link MaskGuardListener} on every worker checks after every step that pruned
 *       weights are exactly zero and the masks are the driver's;
 *   <li>receives the averaged / accumulated parameters, re-applies the masks and counts anything
 *       that leaked;
 *   <li>when the interval ends on an MST topology step: aggregates dense gradients of the sparse
 *       weights over all partitions ({@link DenseGradients#spark}) and runs the one prune/grow
 *       decision ({@link DriverMst}) on the driver's network — the new masks travel to the workers
 *       with the next broadcast;
 *   <li>optionally writes a checkpoint (model, updater, MST state); {@link #resume} continues from
 *       it.
 * </ol>
 *
 * A fresh TrainingMaster per interval is needed for gradient sharing: SharedTrainingMaster (M2)
 * broadcasts the network only once per instance and its workers keep their replica between fits, so
 * a topology change on the driver would otherwise never reach them.
 */
public final class SparkMstTrainer extends IntervalMstTrainer<MultiLayerNetwork, SparkMstTrainer> {
  private static final Logger LOG = LoggerFactory.getLogger(SparkMstTrainer.class);

  /** One interval's record. */
  public static final class IntervalLog implements Serializable {
    private static final long serialVersionUID = 1L;
    public final int interval;
    public final double score;
    public final long driverViolations;
    public final DriverMst.IntervalResult mst;

    /**
     * What the workers reported from their executors during this interval (null for
     * ParallelWrapper, whose workers share the driver's JVM and {@link MaskLedger}).
     */
    public final MaskAudit.Summary audit;

    IntervalLog(
        int interval,
        double score,
        long driverViolations,
        DriverMst.IntervalResult mst,
        MaskAudit.Summary audit) {
      this.interval = interval;
      this.score = score;
      this.driverViolations = driverViolations;
      this.mst = mst;
      this.audit = audit;
    }

    @Override
    public String toString() {
      return "interval="
          + interval
          + " score="
          + score
          + " driverViolations="
          + driverViolations
          + " "
          + mst;
    }
  }

  private final JavaSparkContext sc;
  private final Supplier<TrainingMaster<?, ?>> masters;
  private final int numWorkers;
  private int gradientBatchesPerPartition = 1;
  private int auditEvery = 1;
  private boolean requirePeers = true;
  private long peerTimeoutMs = 60_000;
  private long peerUpdatesThisFit;
  private int exchangeChecks;

  /**
   * @param sc Spark context
   * @param net the network (SparseFlow sparse layers); trained in place on the driver
   * @param config MST config with total steps = worker steps of the whole run
   * @param masters creates one TrainingMaster per interval (its batchSizePerWorker must match the
   *     RDD's minibatches); build a ParameterAveragingTrainingMaster with {@code
   *     saveUpdater(true)}, or the workers' optimizer state is thrown away at every averaging (a
   *     WARN says so)
   * @param numWorkers data-parallel workers (minibatches per synchronous step)
   */
  public SparkMstTrainer(
      JavaSparkContext sc,
      MultiLayerNetwork net,
      MstConfig config,
      Supplier<TrainingMaster<?, ?>> masters,
      int numWorkers) {
    this(sc, net, new DriverMst(config), masters, numWorkers);
  }

  private SparkMstTrainer(
      JavaSparkContext sc,
      MultiLayerNetwork net,
      DriverMst mst,
      Supplier<TrainingMaster<?, ?>> masters,
      int numWorkers) {
    super(net, mst, "spark-");
    if (numWorkers < 1) {
      throw new IllegalArgumentException(
          "numWorkers = " + numWorkers + " is invalid; allowed: an integer >= 1");
    }
    this.sc = sc;
    this.masters = masters;
    this.numWorkers = numWorkers;
    ParameterServerRelease.deleteAeronDirectoriesOnShutdown(); // the driver's mesh roots
    mst.bind(net);
  }

  /**
   * Continues a run from the checkpoint in {@code dir} (model, updater state, MST state, data
   * position).
   */
  public static SparkMstTrainer resume(
      JavaSparkContext sc, File dir, Supplier<TrainingMaster<?, ?>> masters, int numWorkers)
      throws IOException {
    ScaleOutCheckpoint c = ScaleOutCheckpoint.load(dir);
    if (!(c.model() instanceof MultiLayerNetwork)) {
      throw new IllegalArgumentException(
          "dir = "
              + dir
              + " holds a "
              + c.model().getClass().getSimpleName()
              + "; allowed: a MultiLayerNetwork checkpoint");
    }
    return new SparkMstTrainer(
            sc, (MultiLayerNetwork) c.model(), DriverMst.resume(c.state()), masters, numWorkers)
        .resumedFrom(dir);
  }

  /**
   * Minibatches per partition used for the aggregated dense gradient before a topology update
   * (default 1).
   */
  public SparkMstTrainer gradientBatchesPerPartition(int n) {
    if (n < 1) {
      throw new IllegalArgumentException(
          "gradientBatchesPerPartition = " + n + " is invalid; allowed: >= 1");
    }
    this.gradientBatchesPerPartition = n;
    return this;
  }

  /** Worker audit frequency in iterations (default 1: every step). */
  public SparkMstTrainer auditEvery(int n) {
    if (n < 1) {
      throw new IllegalArgumentException("auditEvery = " + n + " is invalid; allowed: >= 1");
    }
    this.auditEvery = n;
    return this;
  }

  /**
   * Gradient sharing: fail when executors in different JVMs received no updates from each other
   * (default true). Without an exchange each executor trains alone on its share of the data.
   */
  public SparkMstTrainer requirePeers(boolean require) {
    this.requirePeers = require;
    return this;
  }

  /**
   * Gradient sharing: how long an executor waits for its peers to join the mesh before its first
   * step, then fails (default 60 s).
   */
  public SparkMstTrainer peerTimeout(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(
          "peerTimeout = " + timeout + " is invalid; allowed: a positive duration");
    }
    this.peerTimeoutMs = timeout.toMillis();
    return this;
  }

  /**
   * Trains until the MST schedule's total steps. {@code data} holds minibatches of the
   * TrainingMaster's batchSizePerWorker examples; interval i uses minibatches [i*deltaT*numWorkers,
   * (i+1)*deltaT*numWorkers), wrapping around (epochs) when the RDD is shorter.
   */
  public MultiLayerNetwork fit(JavaRDD<DataSet> data) {
    int deltaT = mst.deltaT();
    JavaPairRDD<Long, DataSet> indexed =
        data.zipWithIndex()
            .mapToPair(t -> new Tuple2<>(t._2(), t._1()))
            .persist(StorageLevel.MEMORY_ONLY());
    long n = indexed.count();
    if (n == 0) {
      throw new IllegalArgumentException(
          "data is empty; allowed: an RDD with at least one minibatch");
    }
    long perInterval = (long) deltaT * numWorkers;
    peerUpdatesThisFit = 0;
    exchangeChecks = 0;
    int done = 0;
    try {
      for (int i = run.firstInterval(); run.runs(i, done); i++, done++) {
        long start = (i * perInterval) % n;
        JavaRDD<DataSet> chunk = chunk(indexed, start, perInterval, n);
        TrainingMaster<?, ?> tm = masters.get();
        if (tm instanceof SharedTrainingMaster && !sc.isLocal()) {
          chunk = chunk.mapPartitions(new ParameterServerReset(run.runId() + "-" + i), true);
        }
        warnIfUpdaterNotAveraged(tm);
        SparkDl4jMultiLayer spark = new SparkDl4jMultiLayer(sc, net, tm);
        MaskAudit audit = new MaskAudit();
        sc.sc().register(audit, "sparseflow-mask-audit-" + i);
        int executors = trainingExecutors(tm);
        spark.setListeners(
            new MaskGuardListener(run.runId(), i, mst.digests(), auditEvery, audit)
                .awaitMesh(executors > 1 && requirePeers ? executors + 1 : 0, peerTimeoutMs)
                .collectParams(executors > 1));
        spark.fit(chunk);
        MaskAudit.Summary workers = audit.value().copy();
        LOG.info("MST interval {} worker audit: {}", i, workers);
        if (tm instanceof SharedTrainingMaster) {
          // the next interval's master restarts the mesh root anyway; stopping it here also frees
          // the threads dl4j M2 leaves behind (ParameterServerRelease), and after the last interval
          // no root keeps running
          ParameterServerRelease.shutdown();
          checkExchange(i, workers, executors);
          adoptExecutorParams(i, workers);
        }
        // parameter averaging reports the workers' mean score on the Spark wrapper, gradient
        // sharing on the network
        double score = spark.getScore() != 0.0 ? spark.getScore() : net.score();
        final JavaRDD<DataSet> gradData = chunk;
        IntervalLog entry =
            run.end(
                net,
                i,
                deltaT,
                score,
                () ->
                    DenseGradients.spark(
                        sc, gradData, net, mst.core().config(), gradientBatchesPerPartition),
                workers);
        LOG.info("spark MST {}", entry);
        run.checkpointIfDue(net, i, done);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      indexed.unpersist(false);
    }
    if (exchangeChecks > 0 && peerUpdatesThisFit == 0) {
      throw new IllegalStateException(
          "gradient sharing: the executors formed a mesh but none received a single update from"
              + " its peers in "
              + exchangeChecks
              + " intervals, so every executor trained alone. Give each executor its own"
              + " transport port (VoidConfiguration.portSupplier(new ExecutorPortSupplier(base)))"
              + " and open the UDP ports between the hosts; see docs/scale-out.md.");
    }
    return net;
  }

  /**
   * Gradient sharing across JVMs must exchange: every executor that trained has to have received
   * updates from its peers. One executor (or local mode, where all workers share one JVM) needs no
   * peers.
   */
  private void checkExchange(int interval, MaskAudit.Summary workers, int executors) {
    if (!requirePeers || executors < 2) {
      return;
    }
    exchangeChecks++;
    if (workers.byExecutor.size() < executors) {
      throw new IllegalStateException(
          "gradient sharing, interval "
              + interval
              + ": "
              + workers.byExecutor.size()
              + " of "
              + executors
              + " executors reported training steps (an executor whose peers never joined stops"
              + " before its first step; see its log). Audit: "
              + workers);
    }
    long received = 0;
    List<String> none = new ArrayList<>();
    for (Map.Entry<String, MaskAudit.ExecutorAudit> e : workers.byExecutor.entrySet()) {
      received += e.getValue().peerUpdates;
      if (e.getValue().peerUpdates == 0) {
        none.add(e.getKey());
      }
    }
    peerUpdatesThisFit += received;
    if (!none.isEmpty()) {
      // the mesh had formed (every executor waited for it), but these executors finished their
      // steps before a peer's first update arrived: a short interval and executors that start
      // at different times
      LOG.warn(
          "gradient sharing, interval {}: executors {} received no update from their peers"
              + " (their peers started late); the others did: {}",
          interval,
          none,
          workers);
    }
  }

  /**
   * Gradient sharing across JVMs: the driver takes the mean of the executors' final parameters.
   * dl4j-spark M2 leaves the driver's network to the updates its mesh root receives, and with one
   * parameter-server restart per interval the root missed most of them (measured: the driver's
   * network barely trained while the executors did). The executors apply the same shared updates,
   * so their parameters differ only by updates still in flight; the spread is logged.
   */
  private void adoptExecutorParams(int interval, MaskAudit.Summary workers) {
    List<float[]> params = new ArrayList<>();
    for (MaskAudit.ExecutorAudit a : workers.byExecutor.values()) {
      if (a.lastParams != null && a.lastParams.length == net.numParams()) {
        params.add(a.lastParams);
      }
    }
    if (params.isEmpty()) {
      return;
    }
    int n = params.get(0).length;
    double[] mean = new double[n];
    for (float[] p : params) {
      for (int k = 0; k < n; k++) {
        mean[k] += p[k] / (double) params.size();
      }
    }
    double norm = 0;
    double spread = 0;
    for (float[] p : params) {
      double d = 0;
      for (int k = 0; k < n; k++) {
        d += (p[k] - mean[k]) * (p[k] - mean[k]);
      }
      spread = Math.max(spread, Math.sqrt(d));
    }
    for (int k = 0; k < n; k++) {
      norm += mean[k] * mean[k];
    }
    net.params()
        .assign(
            Nd4j.createFromArray(mean)
                .castTo(net.params().dataType())
                .reshape(net.params().shape()));
    LOG.info(
        "MST interval {} gradient sharing: driver adopts the mean of {} executors' parameters"
            + " (largest distance to the mean {} of norm {})",
        interval,
        params.size(),
        spread,
        Math.sqrt(norm));
  }

  /**
   * Executor JVMs that train with gradient sharing: the cluster's executors (the driver's entry
   * excluded), at most one per partition. 0 for parameter averaging and in local mode, where every
   * worker shares the driver's JVM.
   */
  private int trainingExecutors(TrainingMaster<?, ?> tm) {
    if (!(tm instanceof SharedTrainingMaster) || sc.isLocal()) {
      return 0;
    }
    int executors = sc.sc().statusTracker().getExecutorInfos().length - 1;
    return Math.min(executors, numWorkers);
  }

  private boolean warnedUpdater;

  /**
   * {@code ParameterAveragingTrainingMaster.Builder} in dl4j-spark 1.0.0-M2 leaves {@code
   * saveUpdater} false (its javadoc says true). The workers then start every averaging split from
   * the driver's updater state, which is never updated: Adam runs from zero moments on every split
   * (a sign-SGD-like step), the updater state in the checkpoint stays zero, and resetting the
   * optimizer state of regrown weights has no effect.
   */
  private void warnIfUpdaterNotAveraged(TrainingMaster<?, ?> tm) {
    if (!warnedUpdater
        && tm instanceof ParameterAveragingTrainingMaster
        && !((ParameterAveragingTrainingMaster) tm).isSaveUpdater()) {
      warnedUpdater = true;
      LOG.warn(
          "ParameterAveragingTrainingMaster has saveUpdater = false (the dl4j-spark M2 builder"
              + " default): the optimizer state (e.g. Adam moments) is neither averaged nor kept"
              + " between averaging splits and the checkpoint's updater state stays zero. Build it"
              + " with .saveUpdater(true).");
    }
  }

  /**
   * Minibatches [start, start+len) mod n, spread evenly over numWorkers partitions (deterministic).
   */
  private JavaRDD<DataSet> chunk(JavaPairRDD<Long, DataSet> indexed, long start, long len, long n) {
    final int w = numWorkers;
    return indexed
        .filter(t -> Math.floorMod(t._1() - start, n) < len)
        .mapToPair(t -> new Tuple2<>(Math.floorMod(t._1() - start, n) % w, t._2()))
        .partitionBy(new HashPartitioner(w))
        .values(); // not persisted: the TrainingMaster sets its own storage level
  }

  /** Mask digests the driver broadcast (for checks). */
  public Map<String, Long> driverDigests() {
    return mst.digests();
  }
}
