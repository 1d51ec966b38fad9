package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.spark.api.RDDTrainingApproach;
import org.deeplearning4j.spark.api.Repartition;
import org.deeplearning4j.spark.api.TrainingMaster;
import org.deeplearning4j.spark.impl.paramavg.ParameterAveragingTrainingMaster;
import org.deeplearning4j.spark.impl.repartitioner.NoOpRepartitioner;
import org.deeplearning4j.spark.parameterserver.training.SharedTrainingMaster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.parameterserver.distributed.conf.VoidConfiguration;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;

/**
 * MST on Spark local[2]: masks consistent on every worker, loss close to single-machine MST,
 * checkpoint + resume.
 */
class SparkMstTrainerTest {
  static final int WORKERS = 2;
  static final int DELTA_T = 10;
  static final int INTERVALS = 6;
  static final long SEED = 7;

  static JavaSparkContext sc;
  static List<DataSet> train;
  static DataSet validation;

  @BeforeAll
  static void start() {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[" + WORKERS + "]")
            .setAppName("sparseflow-scaleout-test")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1");
    sc = new JavaSparkContext(conf);
    train = ScaleOutFixtures.teacherData(DELTA_T * INTERVALS * WORKERS, 11);
    validation = ScaleOutFixtures.merge(ScaleOutFixtures.teacherData(32, 99));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  /**
   * Parameter averaging after every step. {@code saveUpdater(true)} averages the workers' Adam
   * state as well and keeps it between averaging splits; the M2 builder's default (false) restarts
   * Adam from zero moments on every split, which is not the optimizer the single-machine run uses
   * (measured on the 48-step causal LM: 4.0 % from the single machine instead of 0.6 %).
   */
  static Supplier<TrainingMaster<?, ?>> parameterAveraging(
      int batchSizePerWorker, int averagingFrequency) {
    return () ->
        new ParameterAveragingTrainingMaster.Builder(batchSizePerWorker)
            .batchSizePerWorker(batchSizePerWorker)
            .averagingFrequency(averagingFrequency)
            .saveUpdater(true)
            .workerPrefetchNumBatches(0)
            .rddTrainingApproach(RDDTrainingApproach.Direct)
            .repartionData(Repartition.Never)
            .rngSeed(SEED)
            .build();
  }

  static Supplier<TrainingMaster<?, ?>> parameterAveraging(int averagingFrequency) {
    return parameterAveraging(ScaleOutFixtures.BATCH, averagingFrequency);
  }

  /**
   * Same model as the other MLP tests, trained with a learning rate that decays 10x over the run
   * (see below).
   */
  static MultiLayerNetwork decayingMlp() {
    return ScaleOutFixtures.sparseMlp(
        SEED, ScaleOutFixtures.decayingAdam(3e-2, (long) DELTA_T * INTERVALS));
  }

  JavaRDD<DataSet> rdd() {
    return sc.parallelize(train, WORKERS);
  }

  static void assertWorkersConsistent(String runId, SparkMstTrainer t, int minWorkersPerVersion) {
    List<MaskLedger.Observation> obs = MaskLedger.observations(runId);
    assertFalse(obs.isEmpty(), "worker listener never ran");
    Map<Integer, Set<String>> workers = new HashMap<>();
    for (MaskLedger.Observation o : obs) {
      assertEquals(
          0,
          o.violations,
          "pruned weight nonzero on worker " + o.worker + " iteration " + o.iteration);
      assertTrue(
          o.masksMatchDriver,
          "worker "
              + o.worker
              + " trained with masks other than the driver's, version "
              + o.version);
      workers.computeIfAbsent(o.version, k -> new HashSet<>()).add(o.worker);
    }
    for (Map.Entry<Integer, Set<String>> e : workers.entrySet()) {
      assertTrue(
          e.getValue().size() >= minWorkersPerVersion,
          "interval " + e.getKey() + " saw workers " + e.getValue());
    }
    for (SparkMstTrainer.IntervalLog l : t.log()) {
      assertEquals(0, l.driverViolations, "averaged parameters had nonzero pruned weights: " + l);
      // the same observations, carried to the driver by the interval's accumulator
      assertTrue(l.audit.observations() > 0, "no audit reached the driver: " + l);
      assertEquals(0, l.audit.prunedNonZero(), "audit: pruned weights nonzero " + l);
      assertEquals(0, l.audit.maskMismatches(), "audit: masks differ from the driver's " + l);
      assertEquals(1, l.audit.maskDigests().size(), "audit: one topology per interval " + l);
    }
  }

  @Test
  void parameterAveragingKeepsMasksMatchesSingleMachineAndResumes(@TempDir File tmp)
      throws Exception {
    MstConfig cfg = ScaleOutFixtures.mst(DELTA_T, INTERVALS);

    // With a constant learning rate (Adam 1e-2) the 60-step runs stop mid-descent, and
    // data-parallel Adam (two
    // normalised half-batch updates, averaged) descends a little faster than one Adam step on the
    // merged batch:
    // Spark was 7 % below the single machine. A learning rate decaying 3e-2 -> 3e-3 lets both
    // settle (1.1 %).
    MultiLayerNetwork single = ScaleOutFixtures.singleMachine(decayingMlp(), cfg, train, WORKERS);
    double singleLoss = single.score(validation);

    SparkMstTrainer full =
        new SparkMstTrainer(sc, decayingMlp(), cfg, parameterAveraging(1), WORKERS);
    full.fit(rdd());
    double sparkLoss = full.network().score(validation);
    assertWorkersConsistent(full.runId(), full, WORKERS);
    long updates = full.log().stream().filter(l -> l.mst.topologyUpdated).count();
    long changed = full.log().stream().mapToLong(l -> l.mst.pruned + l.mst.grown).sum();
    assertEquals(INTERVALS - 1, updates, "one topology update per interval boundary");
    assertTrue(changed > 0, "MST never changed the topology");
    System.out.println(
        "RESULT spark-mst param-avg singleLoss="
            + singleLoss
            + " sparkLoss="
            + sparkLoss
            + " relDiff="
            + ScaleOutFixtures.relDiff(sparkLoss, singleLoss)
            + " topologyUpdates="
            + updates
            + " prunedPlusGrown="
            + changed
            + " density="
            + full.log().get(full.log().size() - 1).mst.globalDensity);
    assertTrue(
        ScaleOutFixtures.relDiff(sparkLoss, singleLoss) < 0.03,
        "validation loss " + sparkLoss + " vs single-machine " + singleLoss);

    // same run, killed after 3 intervals and resumed from the checkpoint
    File dir = new File(tmp, "ckpt");
    SparkMstTrainer first =
        new SparkMstTrainer(sc, decayingMlp(), cfg, parameterAveraging(1), WORKERS)
            .checkpoint(dir, 1)
            .stopAfterIntervals(3);
    first.fit(rdd());
    assertEquals(3L * DELTA_T, first.state().getStep());
    SparkMstTrainer resumed = SparkMstTrainer.resume(sc, dir, parameterAveraging(1), WORKERS);
    assertEquals(3L * DELTA_T, resumed.state().getStep(), "MST step restored");
    resumed.fit(rdd());
    assertEquals(
        3,
        resumed.log().get(0).interval,
        "resume continues with the interval after the checkpoint");
    MstState a = full.state();
    MstState b = resumed.state();
    assertEquals(a.getStep(), b.getStep());
    assertEquals(a.getTopologyUpdates(), b.getTopologyUpdates());
    assertEquals(a.getMasks(), b.getMasks(), "resumed run reaches the same topology");
    assertEquals(a.getRngState(), b.getRngState());
    double resumedLoss = resumed.network().score(validation);
    System.out.println(
        "RESULT spark-mst resume fullLoss="
            + sparkLoss
            + " resumedLoss="
            + resumedLoss
            + " masksEqual="
            + a.getMasks().equals(b.getMasks()));
    assertWorkersConsistent(resumed.runId(), resumed, WORKERS);
    assertEquals(
        sparkLoss,
        resumedLoss,
        1e-4 * Math.abs(sparkLoss),
        "resumed run ends where the uninterrupted one does");
  }

  static Supplier<TrainingMaster<?, ?>> gradientSharing() {
    return () ->
        new SharedTrainingMaster.Builder(
                VoidConfiguration.builder()
                    .unicastPort(40327)
                    .networkMask("127.0.0.0/8")
                    .controllerAddress("127.0.0.1")
                    .build(),
                ScaleOutFixtures.BATCH)
            .batchSizePerWorker(ScaleOutFixtures.BATCH)
            .workersPerNode(1)
            .rddTrainingApproach(RDDTrainingApproach.Direct)
            .repartitioner(new NoOpRepartitioner())
            .rngSeed(SEED)
            .build();
  }

  @Test
  void gradientSharingKeepsMasksOnEveryWorkerAndBroadcastsTopologyChanges() {
    int intervals = 3;
    MstConfig cfg = ScaleOutFixtures.mst(DELTA_T, intervals);
    SparkMstTrainer t =
        new SparkMstTrainer(sc, ScaleOutFixtures.sparseMlp(SEED), cfg, gradientSharing(), WORKERS);
    double before = t.network().score(validation);
    t.fit(rdd());
    double after = t.network().score(validation);
    assertWorkersConsistent(t.runId(), t, 1);
    Set<Integer> versions = new HashSet<>();
    MaskLedger.observations(t.runId()).forEach(o -> versions.add(o.version));
    assertEquals(
        Set.of(0, 1, 2),
        versions,
        "workers trained every interval, each with that interval's masks");
    long updates = t.log().stream().filter(l -> l.mst.topologyUpdated).count();
    assertEquals(intervals - 1, updates);
    System.out.println(
        "RESULT spark-mst gradient-sharing lossBefore="
            + before
            + " lossAfter="
            + after
            + " topologyUpdates="
            + updates
            + " workerObservations="
            + MaskLedger.observations(t.runId()).size());
    assertTrue(after < before, "gradient sharing did not train: " + before + " -> " + after);
  }

  @Test
  void gptStyleCausalAttentionModelKeepsMasksMatchesSingleMachineAndResumes(@TempDir File tmp)
      throws Exception {
    // 6 intervals of 32 steps (192 synchronous steps), Adam 3e-2 decaying to 3e-3: both runs end
    // within 2 % of the Bayes-optimal validation loss (6.63). Shorter runs with a constant rate
    // stop
    // on the noise floor of their optimizer, where the Spark-vs-single gap depended on the data
    // seed (up to 2.7 % with 96 steps, 4 % with 48); see docs/scale-out.md.
    int intervals = 6;
    int deltaT = 32;
    MstConfig cfg = CausalLmFixtures.mst(deltaT, intervals);
    List<DataSet> lm = CausalLmFixtures.data(deltaT * intervals * WORKERS, 31);
    DataSet val = DataSet.merge(CausalLmFixtures.data(8, 77));
    IUpdater adam = ScaleOutFixtures.decayingAdam(3e-2, (long) deltaT * intervals);
    double singleLoss =
        ScaleOutFixtures.singleMachine(CausalLmFixtures.causalLm(SEED, adam), cfg, lm, WORKERS)
            .score(val);
    Supplier<TrainingMaster<?, ?>> pa = parameterAveraging(CausalLmFixtures.BATCH, 1);
    MultiLayerNetwork net = CausalLmFixtures.causalLm(SEED, adam);
    double before = net.score(val);
    SparkMstTrainer t = new SparkMstTrainer(sc, net, cfg, pa, WORKERS);
    assertEquals(
        4, t.driverDigests().size(), "Wq, Wk, Wv, Wo of the attention block are MST-driven");
    t.fit(sc.parallelize(lm, WORKERS));
    double sparkLoss = net.score(val);
    assertWorkersConsistent(t.runId(), t, WORKERS);
    long updates = t.log().stream().filter(l -> l.mst.topologyUpdated).count();
    System.out.println(
        "RESULT spark-mst causal-lm lossBefore="
            + before
            + " singleLoss="
            + singleLoss
            + " sparkLoss="
            + sparkLoss
            + " relDiff="
            + ScaleOutFixtures.relDiff(sparkLoss, singleLoss)
            + " bayesLoss="
            + CausalLmFixtures.bayesLoss(val)
            + " topologyUpdates="
            + updates
            + " density="
            + t.log().get(t.log().size() - 1).mst.globalDensity);
    assertEquals(intervals - 1, updates);
    assertTrue(
        sparkLoss < 0.5 * before,
        "the language model did not learn: " + before + " -> " + sparkLoss);
    double bayes = CausalLmFixtures.bayesLoss(val);
    assertTrue(
        sparkLoss < 1.05 * bayes && singleLoss < 1.05 * bayes,
        "not converged: spark "
            + sparkLoss
            + ", single "
            + singleLoss
            + ", Bayes-optimal "
            + bayes);
    assertTrue(
        ScaleOutFixtures.relDiff(sparkLoss, singleLoss) < 0.03,
        sparkLoss + " vs single " + singleLoss);

    // same run, killed after 3 intervals and resumed from the checkpoint
    File dir = new File(tmp, "lm-ckpt");
    SparkMstTrainer first =
        new SparkMstTrainer(sc, CausalLmFixtures.causalLm(SEED, adam), cfg, pa, WORKERS)
            .checkpoint(dir, 1)
            .stopAfterIntervals(3);
    first.fit(sc.parallelize(lm, WORKERS));
    assertEquals(3L * deltaT, first.state().getStep());
    SparkMstTrainer resumed = SparkMstTrainer.resume(sc, dir, pa, WORKERS);
    assertEquals(3L * deltaT, resumed.state().getStep(), "MST step restored");
    resumed.fit(sc.parallelize(lm, WORKERS));
    assertEquals(
        3,
        resumed.log().get(0).interval,
        "resume continues with the interval after the checkpoint");
    assertEquals(t.state().getStep(), resumed.state().getStep());
    assertEquals(t.state().getTopologyUpdates(), resumed.state().getTopologyUpdates());
    assertEquals(
        t.state().getMasks(), resumed.state().getMasks(), "resumed run reaches the same topology");
    assertEquals(t.state().getRngState(), resumed.state().getRngState());
    assertWorkersConsistent(resumed.runId(), resumed, WORKERS);
    double resumedLoss = resumed.network().score(val);
    System.out.println(
        "RESULT spark-mst causal-lm resume fullLoss=" + sparkLoss + " resumedLoss=" + resumedLoss);
    assertEquals(
        sparkLoss,
        resumedLoss,
        1e-4 * Math.abs(sparkLoss),
        "resumed run ends where the uninterrupted one does");
  }
}
