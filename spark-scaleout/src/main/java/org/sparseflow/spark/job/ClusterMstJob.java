package org.sparseflow.spark.job;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.solvers.accumulation.encoding.residual.NoOpResidualPostProcessor;
import org.deeplearning4j.optimize.solvers.accumulation.encoding.threshold.FixedThresholdAlgorithm;
import org.deeplearning4j.spark.api.RDDTrainingApproach;
import org.deeplearning4j.spark.api.Repartition;
import org.deeplearning4j.spark.api.TrainingMaster;
import org.deeplearning4j.spark.impl.paramavg.ParameterAveragingTrainingMaster;
import org.deeplearning4j.spark.impl.repartitioner.NoOpRepartitioner;
import org.deeplearning4j.spark.parameterserver.training.SharedTrainingMaster;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.parameterserver.distributed.conf.VoidConfiguration;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.spark.ExecutorPortSupplier;
import org.sparseflow.spark.MaskAudit;
import org.sparseflow.spark.MaskedWeights;
import org.sparseflow.spark.SparkMstTrainer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * spark-submit entry point of the job jar: MST on the {@link TeacherMlp} fixture with parameter
 * averaging or gradient sharing, optionally with the single-machine reference, a checkpoint, a
 * stop-and-wait-to-be-killed step and a resume. Writes what it measured (losses, the executors'
 * audits per interval, the final MST state) as JSON for the caller to check.
 */
@Command(
    name = "cluster-mst-job",
    mixinStandardHelpOptions = true,
    description =
        "MST on a Spark cluster with the SparseFlow test fixture (sparse MLP, teacher data).")
public final class ClusterMstJob implements Callable<Integer> {
  /** Adam's initial learning rate (decaying 10x over the run) of the single-machine run. */
  static final double LR = 3e-2;

  /** Printed (stdout) when a run stopped on purpose and waits to be killed. */
  public static final String WAITING_MARKER = "SPARSEFLOW-JOB waiting to be killed";

  enum Mode {
    PARAM_AVG,
    GRAD_SHARE
  }

  @Option(
      names = "--mode",
      required = true,
      description = "training master: ${COMPLETION-CANDIDATES}")
  Mode mode;

  @Option(names = "--workers", defaultValue = "2", description = "executor cores that train")
  int workers;

  @Option(names = "--intervals", defaultValue = "6", description = "MST intervals")
  int intervals;

  @Option(names = "--delta-t", defaultValue = "10", description = "steps per MST interval")
  int deltaT;

  @Option(names = "--seed", defaultValue = "7", description = "network seed")
  long seed;

  @Option(names = "--data-seed", defaultValue = "11", description = "training data seed")
  long dataSeed;

  @Option(names = "--result", description = "JSON file for the results (written by the driver)")
  File result;

  @Option(names = "--reference", description = "also run single-machine MST on the same samples")
  boolean reference;

  @Option(names = "--resume", description = "continue the run checkpointed in this directory")
  File resume;

  @Option(
      names = "--kill-test-checkpoint",
      description =
          "after the run, start it again checkpointing into this directory, stop after"
              + " --stop-after intervals and wait to be killed")
  File killTestCheckpoint;

  @Option(names = "--stop-after", defaultValue = "3", description = "intervals before the stop")
  int stopAfter;

  @Option(
      names = "--controller",
      defaultValue = "127.0.0.1",
      description = "gradient sharing: driver address")
  String controller;

  @Option(
      names = "--transport-base-port",
      defaultValue = "40200",
      description = "gradient sharing: UDP port of the driver; executor i uses base + 1 + i")
  int transportBasePort;

  @Option(
      names = "--threshold",
      defaultValue = "5e-3",
      description =
          "gradient sharing: fixed encoding threshold; an element moves by at most this much per"
              + " step and worker, so it must be near the optimizer's step size")
  double threshold;

  @Option(
      names = "--network-mask",
      defaultValue = "127.0.0.0/8",
      description = "gradient sharing: network of the executors")
  String networkMask;

  public static void main(String[] args) {
    System.exit(new CommandLine(new ClusterMstJob()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    if (workers < 1 || intervals < 1 || deltaT < 1 || stopAfter < 1) {
      throw new CommandLine.ParameterException(
          new CommandLine(this),
          "--workers, --intervals, --delta-t and --stop-after must be >= 1; got "
              + workers
              + ", "
              + intervals
              + ", "
              + deltaT
              + ", "
              + stopAfter);
    }
    JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("sparseflow-" + mode));
    try {
      return run(sc);
    } finally {
      sc.stop();
    }
  }

  private int run(JavaSparkContext sc) throws IOException, InterruptedException {
    MstConfig cfg = TeacherMlp.mst(deltaT, intervals);
    List<DataSet> train = TeacherMlp.teacherData(deltaT * intervals * workers, dataSeed);
    DataSet validation = DataSet.merge(TeacherMlp.teacherData(32, 99));
    JavaRDD<DataSet> rdd = sc.parallelize(train, workers);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("mode", mode.toString());
    out.put("workers", workers);
    out.put("applicationId", sc.sc().applicationId());
    if (reference) {
      double ref = TeacherMlp.singleMachine(network(LR), cfg, train, workers).score(validation);
      out.put("referenceLoss", ref);
    }
    SparkMstTrainer trainer =
        resume != null
            ? SparkMstTrainer.resume(sc, resume, masters(), workers).checkpoint(resume, 1)
            : new SparkMstTrainer(sc, network(clusterLr()), cfg, masters(), workers);
    out.put("firstInterval", (int) (trainer.state().getStep() / deltaT));
    out.put("initialLoss", trainer.network().score(validation));
    trainer.fit(rdd);
    out.put("loss", trainer.network().score(validation));
    out.put("step", trainer.state().getStep());
    out.put("topologyUpdates", trainer.state().getTopologyUpdates());
    out.put("rngState", trainer.state().getRngState());
    out.put("finalMaskDigest", Long.toHexString(MaskedWeights.combined(trainer.driverDigests())));
    out.put("intervals", intervalRecords(trainer));
    if (result != null) {
      ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
      json.writeValue(result, out);
    }
    if (killTestCheckpoint != null) {
      SparkMstTrainer first =
          new SparkMstTrainer(sc, network(clusterLr()), cfg, masters(), workers)
              .checkpoint(killTestCheckpoint, 1)
              .stopAfterIntervals(stopAfter);
      first.fit(rdd);
      System.out.println(WAITING_MARKER + " (step " + first.state().getStep() + ")");
      System.out.flush();
      Thread.sleep(Long.MAX_VALUE);
    }
    return 0;
  }

  /**
   * Gradient sharing applies every worker's update on every worker, i.e. the sum of the workers'
   * steps, where parameter averaging and the single machine take their mean; dividing the learning
   * rate by the number of workers makes them take the same step.
   */
  private double clusterLr() {
    return mode == Mode.GRAD_SHARE ? LR / workers : LR;
  }

  private MultiLayerNetwork network(double lr) {
    IUpdater adam = TeacherMlp.decayingAdam(lr, (long) deltaT * intervals);
    return TeacherMlp.sparseMlp(seed, adam);
  }

  private static List<Map<String, Object>> intervalRecords(SparkMstTrainer trainer) {
    List<Map<String, Object>> list = new ArrayList<>();
    for (SparkMstTrainer.IntervalLog l : trainer.log()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("interval", l.interval);
      m.put("score", l.score);
      m.put("driverViolations", l.driverViolations);
      m.put("topologyUpdated", l.mst.topologyUpdated);
      Map<String, Object> executors = new LinkedHashMap<>();
      for (Map.Entry<String, MaskAudit.ExecutorAudit> e : l.audit.byExecutor.entrySet()) {
        MaskAudit.ExecutorAudit a = e.getValue();
        Map<String, Object> x = new LinkedHashMap<>();
        x.put("observations", a.observations);
        x.put("prunedNonZero", a.prunedNonZero);
        x.put("maskMismatches", a.maskMismatches);
        List<String> digests = new ArrayList<>();
        a.maskDigests.forEach(d -> digests.add(Long.toHexString(d)));
        x.put("maskDigests", digests);
        x.put("minMeshNodes", a.minMeshNodes);
        x.put("maxMeshNodes", a.maxMeshNodes);
        x.put("peerUpdates", a.peerUpdates);
        executors.put(e.getKey(), x);
      }
      m.put("executors", executors);
      list.add(m);
    }
    return list;
  }

  private Supplier<TrainingMaster<?, ?>> masters() {
    final int batch = TeacherMlp.BATCH;
    final long rng = seed;
    if (mode == Mode.PARAM_AVG) {
      // averaging after every step with the optimizer state averaged too (saveUpdater, see
      // docs/scale-out.md): the same optimizer as the single-machine run
      return () ->
          new ParameterAveragingTrainingMaster.Builder(batch)
              .batchSizePerWorker(batch)
              .averagingFrequency(1)
              .saveUpdater(true)
              .workerPrefetchNumBatches(0)
              .rddTrainingApproach(RDDTrainingApproach.Direct)
              .repartionData(Repartition.Never)
              .rngSeed(rng)
              .build();
    }
    final String host = controller;
    final int base = transportBasePort;
    final String mask = networkMask;
    final double t = threshold;
    return () -> {
      // the driver (mesh root) takes its port from the same supplier: base; executor i: base+1+i
      VoidConfiguration voidConf =
          VoidConfiguration.builder()
              .controllerAddress(host)
              .portSupplier(new ExecutorPortSupplier(base))
              .networkMask(mask)
              .build();
      return new SharedTrainingMaster.Builder(voidConf, batch)
          .batchSizePerWorker(batch)
          .workersPerNode(1)
          .rddTrainingApproach(RDDTrainingApproach.Direct)
          .repartitioner(new NoOpRepartitioner())
          // DL4J's defaults are an adaptive threshold starting at 1e-4 and residuals clipped to 5x
          // the threshold every 5 steps: with Adam steps of ~1e-2 that clipping throws away nearly
          // all of each update, and the workers barely move. A fixed threshold near the step size,
          // and residuals kept until they are sent, transmit the whole update.
          .thresholdAlgorithm(new FixedThresholdAlgorithm(t))
          .residualPostProcessor(new NoOpResidualPostProcessor())
          .rngSeed(rng)
          .build();
    };
  }
}
