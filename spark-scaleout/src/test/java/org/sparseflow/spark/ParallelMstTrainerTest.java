package org.sparseflow.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.parallelism.ParallelWrapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.dataset.DataSet;
import org.sparseflow.mst.core.MstConfig;

/**
 * MST with ParallelWrapper (2 workers): masks consistent on every replica, loss close to
 * single-machine, resume.
 */
class ParallelMstTrainerTest {
  static final int WORKERS = 2;
  static final int DELTA_T = 8;
  static final int INTERVALS = 5;
  static final long SEED = 5;

  @Test
  void averagingKeepsMasksMatchesSingleMachineAndResumes(@TempDir File tmp) throws Exception {
    List<DataSet> train = ScaleOutFixtures.teacherData(DELTA_T * INTERVALS * WORKERS, 21);
    DataSet validation = ScaleOutFixtures.merge(ScaleOutFixtures.teacherData(32, 98));
    MstConfig cfg = ScaleOutFixtures.mst(DELTA_T, INTERVALS);

    double singleLoss = ScaleOutFixtures.singleMachine(cfg, train, WORKERS, SEED).score(validation);

    ParallelMstTrainer full =
        new ParallelMstTrainer(
            ScaleOutFixtures.sparseMlp(SEED),
            cfg,
            WORKERS,
            1,
            ParallelWrapper.TrainingMode.AVERAGING);
    full.fit(train);
    double pwLoss = ((MultiLayerNetwork) full.network()).score(validation);

    List<MaskLedger.Observation> obs = MaskLedger.observations(full.runId());
    assertFalse(obs.isEmpty());
    Map<Integer, Set<String>> replicas = new HashMap<>();
    for (MaskLedger.Observation o : obs) {
      assertEquals(0, o.violations, "pruned weight nonzero on replica " + o.worker);
      assertTrue(
          o.masksMatchDriver,
          "replica " + o.worker + " has masks other than the model's, version " + o.version);
      replicas.computeIfAbsent(o.version, k -> new HashSet<>()).add(o.worker);
    }
    replicas.forEach((v, w) -> assertEquals(WORKERS, w.size(), "interval " + v + " replicas " + w));
    long updates = full.log().stream().filter(l -> l.mst.topologyUpdated).count();
    assertEquals(INTERVALS - 1, updates);
    full.log().forEach(l -> assertEquals(0, l.driverViolations));
    System.out.println(
        "RESULT pw-mst averaging singleLoss="
            + singleLoss
            + " pwLoss="
            + pwLoss
            + " relDiff="
            + ScaleOutFixtures.relDiff(pwLoss, singleLoss)
            + " topologyUpdates="
            + updates);
    assertTrue(
        ScaleOutFixtures.relDiff(pwLoss, singleLoss) < 0.03,
        pwLoss + " vs single-machine " + singleLoss);

    File dir = new File(tmp, "pw");
    ParallelMstTrainer first =
        new ParallelMstTrainer(
                ScaleOutFixtures.sparseMlp(SEED),
                cfg,
                WORKERS,
                1,
                ParallelWrapper.TrainingMode.AVERAGING)
            .checkpoint(dir, 1)
            .stopAfterIntervals(2);
    first.fit(train);
    ParallelMstTrainer resumed =
        ParallelMstTrainer.resume(dir, WORKERS, 1, ParallelWrapper.TrainingMode.AVERAGING);
    assertEquals(2L * DELTA_T, resumed.state().getStep());
    resumed.fit(train);
    assertEquals(2, resumed.log().get(0).interval);
    assertEquals(full.state().getStep(), resumed.state().getStep());
    double resumedLoss = ((MultiLayerNetwork) resumed.network()).score(validation);
    System.out.println(
        "RESULT pw-mst resume fullLoss="
            + pwLoss
            + " resumedLoss="
            + resumedLoss
            + " masksEqual="
            + full.state().getMasks().equals(resumed.state().getMasks()));
    assertTrue(ScaleOutFixtures.relDiff(resumedLoss, pwLoss) < 0.03, resumedLoss + " vs " + pwLoss);
  }

  @Test
  void rejectsAveragingFrequencyThatDoesNotDivideTheInterval() {
    MstConfig cfg = ScaleOutFixtures.mst(DELTA_T, 2);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new ParallelMstTrainer(
                    ScaleOutFixtures.sparseMlp(1),
                    cfg,
                    2,
                    3,
                    ParallelWrapper.TrainingMode.AVERAGING));
    assertTrue(e.getMessage().contains("averagingFrequency = 3"), e.getMessage());
  }
}
