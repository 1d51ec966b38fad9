package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sparseflow.mst.core.FlopCounter;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.mst.report.MstLog;
import org.sparseflow.mst.report.MstPlots;

class ReportTest {

  @Test
  void jsonlLogRoundTripsAndPlotsRender(@TempDir Path dir) throws Exception {
    MstConfig config = MstConfig.preset("mst");
    config.setTopologyUpdates(0); // the preset's ΔT = 100, not scaled to this 1000-step run
    MstCore core = new MstCore(config.withTotalSteps(1000));
    core.register("0_qkv", 16, 48);
    core.register("0_fc1", 16, 64);
    core.setFlopCounter(FlopCounter.forGpt(1, 16, 2, 32, 20, 2), Map.of());
    core.setAttentionLayers(1);
    core.setSeqLen(32);
    core.initialize(null);
    Path file = dir.resolve("mst.jsonl");
    Random r = new Random(1);
    float[] w1 = new float[16 * 48];
    float[] w2 = new float[16 * 64];
    for (int i = 0; i < w1.length; i++) {
      w1[i] = (float) r.nextGaussian();
    }
    for (int i = 0; i < w2.length; i++) {
      w2[i] = (float) r.nextGaussian();
    }
    try (MstLog log = new MstLog(file)) {
      core.addRecordListener(log);
      for (long t = 0; t < 1000; t++) {
        core.stepDone(t, 2.0 - t / 1000.0);
        if (core.isTopologyStep(t)) {
          core.updateTopology(
              t, Map.of("0_qkv", w1, "0_fc1", w2), Map.of("0_qkv", w1, "0_fc1", w2));
        }
      }
    }
    List<UpdateRecord> recs = MstLog.read(file);
    assertEquals(9, recs.size());
    UpdateRecord mid = recs.get(4);
    assertEquals(500, mid.step);
    assertEquals("ULTRA", mid.phase);
    assertEquals(List.of("local:16"), mid.attentionPatterns);
    assertTrue(mid.flops > 0 && mid.flops < mid.denseFlops, "sparse run counts fewer FLOPs");
    assertEquals(mid.prunedTotal, mid.pruned.values().stream().mapToLong(Long::longValue).sum());
    assertEquals(1.5, mid.loss, 1e-3);
    MstPlots.sparsitySchedule(core.config().getSchedule(), recs, dir.resolve("s.png"));
    MstPlots.densityHeatMap(recs, dir.resolve("h.png"));
    MstPlots.lossVsFlops(
        Map.of("mst", new double[][] {{1, 2, 3}, {3, 2, 1.5}}), dir.resolve("l.png"));
    for (String p : List.of("s.png", "h.png", "l.png")) {
      byte[] b = Files.readAllBytes(dir.resolve(p));
      assertTrue(b.length > 1000 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G', p);
    }
  }
}
