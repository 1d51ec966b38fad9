package org.sparseflow.bench.mst;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.TokenSplit;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.UpdateRecord;

/**
 * The benchmark's ComputationGraph path on a small GPT: MST binds every attention/MLP weight under
 * the names the FLOP counter uses (a mismatch would silently count them dense), sparse attention is
 * applied, and the dense run counts exactly dense FLOPs.
 */
class GraphMstBenchmarkTest {

  @Test
  void helpPrintsUsageInsteadOfTraining() throws Exception {
    PrintStream old = System.out;
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
    try {
      MstBenchmark.main(new String[] {"--help"});
    } finally {
      System.setOut(old);
    }
    String out = buf.toString(StandardCharsets.UTF_8);
    assertTrue(
        out.startsWith("usage: mst")
            && out.contains("--model graph")
            && !out.contains("gpt-mini ("),
        out);
    assertTrue(out.contains("--lr-decay") && out.contains("--grad-clip"), out);
    for (String preset : MstConfig.PRESETS) {
      assertTrue(out.contains(preset), "usage lists preset " + preset + ": " + out);
    }
  }

  @Test
  void gradientClipIsCheckedAndPartOfTheReusedDenseBaselinesSettings(@TempDir Path dir)
      throws Exception {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                MstBenchmark.main(
                    new String[] {"--grad-clip", "-1", "--model", "graph", "--flops-only"}));
    assertTrue(e.getMessage().contains("--grad-clip = -1.0"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MstBenchmark.main(new String[] {"--grad-clip", "1", "--flops-only"}));
    assertTrue(
        e.getMessage().contains("--model samediff") && e.getMessage().contains("--model graph"),
        e.getMessage());

    Path file = dir.resolve(DenseBaseline.DENSE_GRAPH_RESULT);
    MstRun run =
        new MstRun(
            "dense",
            1.5,
            2e12,
            2e12,
            10.0,
            0.0,
            new double[][] {{1e12, 2e12}, {2.0, 1.5}},
            List.of(),
            MstConfig.preset("dense"));
    var clipped = new DenseBaseline.TrainSettings(2000, 2e-3, "none", 1.0);
    DenseBaseline.write(file, run, clipped, 2);
    assertEquals(1.5, DenseBaseline.read(file, clipped).valLoss(), 0.0);
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                DenseBaseline.read(file, new DenseBaseline.TrainSettings(2000, 2e-3, "none", 0.0)));
    assertTrue(
        e.getMessage().contains("grad_clip=1.0") && e.getMessage().contains("grad_clip=0.0"),
        e.getMessage());
    // a baseline trained on another corpus is refused
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                DenseBaseline.read(
                    file,
                    new DenseBaseline.TrainSettings(
                        2000, 2e-3, "none", 1.0, "abc123", MstVariants.SEED, "gpt-mini")));
    assertTrue(
        e.getMessage().contains("sha256") && e.getMessage().contains("abc123"), e.getMessage());
    // ... and so is one of another seed or model size
    String sha = clipped.corpusSha256();
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                DenseBaseline.read(
                    file,
                    new DenseBaseline.TrainSettings(2000, 2e-3, "none", 1.0, sha, 7, "gpt-mini")));
    assertTrue(e.getMessage().contains("seed=7"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                DenseBaseline.read(
                    file,
                    new DenseBaseline.TrainSettings(
                        2000, 2e-3, "none", 1.0, sha, MstVariants.SEED, "gpt-small")));
    assertTrue(e.getMessage().contains("size=gpt-small"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MstBenchmark.main(new String[] {"--size", "gpt-huge", "--flops-only"}));
    assertTrue(e.getMessage().contains("--size = gpt-huge"), e.getMessage());
  }

  @Test
  void corpusAndModelOptionsAreChecked(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("missing.txt");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MstBenchmark.main(new String[] {"--corpus", missing.toString(), "--flops-only"}));
    assertTrue(
        e.getMessage().contains("--corpus = " + missing) && e.getMessage().contains("UTF-8"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MstBenchmark.main(new String[] {"--model", "sparse", "--flops-only"}));
    assertTrue(e.getMessage().contains("samediff-sparse"), e.getMessage());
    // a corpus file is read instead of the bundled text
    Path text = dir.resolve("text.txt");
    Files.writeString(text, "the quick brown fox jumps over the lazy dog. ".repeat(1000));
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    PrintStream old = System.out;
    System.setOut(new PrintStream(buf, true, "UTF-8"));
    try {
      MstBenchmark.main(new String[] {"--corpus", text.toString(), "--flops-only"});
    } finally {
      System.setOut(old);
    }
    String out = buf.toString("UTF-8");
    assertTrue(out.contains("corpus: ") && out.contains("text.txt"), out);
  }

  @Test
  void learningRateDecayIsCheckedAndDecaysToZero() throws Exception {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MstBenchmark.main(new String[] {"--lr-decay", "cosine", "--flops-only"}));
    assertTrue(
        e.getMessage().contains("--lr-decay = cosine") && e.getMessage().contains("linear"),
        e.getMessage());
    IUpdater linear = MstVariants.adam(1e-3, "linear", 100);
    assertEquals(1e-3, linear.getLearningRate(0, 0), 1e-15);
    assertEquals(5e-4, linear.getLearningRate(50, 0), 1e-15);
    assertEquals(0.0, linear.getLearningRate(100, 0), 1e-15);
    assertEquals(1e-3, MstVariants.adam(1e-3, "none", 100).getLearningRate(99, 0), 1e-15);
    // the schedule survives the model configuration's JSON round trip (saved models keep their
    // optimizer)
    var conf = ComputationGraphGpt.configuration(new GptConfig(11, 1, 8, 2, 8, 1), linear);
    var back = ComputationGraphConfiguration.fromJson(conf.toJson());
    assertEquals(conf.toJson(), back.toJson());
    var adamBack =
        (Adam)
            back.getVertices().values().stream()
                .filter(
                    v ->
                        v instanceof LayerVertex lv
                            && lv.getLayerConf().getLayer() instanceof BaseLayer)
                .map(v -> ((BaseLayer) ((LayerVertex) v).getLayerConf().getLayer()).getIUpdater())
                .findFirst()
                .orElseThrow();
    assertEquals(5e-4, adamBack.getLearningRate(50, 0), 1e-15, "the decay itself survives");
    assertThrows(IllegalArgumentException.class, () -> new LinearDecaySchedule(1e-3, 0));
  }

  @Test
  void graphVariantCountsSparseFlopsForEveryBoundWeight(@TempDir Path dir) throws Exception {
    GptConfig g = new GptConfig(12, 1, 32, 2, 32, 5);
    Random r = new Random(3);
    int[] tokens = new int[20_000];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] =
          i % 7 == 0 ? r.nextInt(12) : (tokens[Math.max(0, i - 1)] + 1) % 12; // learnable runs
    }
    TokenSplit split = TokenSplit.of(tokens, 0.9, g.context());
    int[][][] eval = BatchSampler.evaluationBatches(split.validation(), g.context(), 16, 16);
    MstConfig base = MstConfig.preset("mst-local");
    int steps = 20;

    MstRun sparse =
        GraphMstRun.train(
            "block16",
            new RunSetup(base, g, split, eval, steps, 1, dir, MstVariants.SEED),
            new Adam(2e-3),
            0.0);
    assertEquals(
        6,
        MstVariants.flopCounter(g, true).linears().stream()
            .filter(l -> MstVariants.configFor(base, "block16", steps, true).selects(l.name))
            .count(),
        "4 attention projections + fc + proj are selected under their graph names");
    UpdateRecord last = sparse.records().get(sparse.records().size() - 1);
    assertEquals(
        6, last.layerDensity.size(), "MST bound all 6 weights: " + last.layerDensity.keySet());
    for (String name : last.layerDensity.keySet()) {
      assertTrue(
          MstVariants.flopCounter(g, true).linears().stream().anyMatch(l -> l.name.equals(name)),
          name + " is not a FLOP-counter linear");
    }
    assertTrue(last.globalDensity < 0.2, "ultra phase density " + last.globalDensity);
    assertTrue(
        sparse.flops() < 0.6 * sparse.denseFlops(),
        sparse.flops() + " vs dense " + sparse.denseFlops());
    assertTrue(
        Double.isFinite(sparse.valLoss()) && sparse.valLoss() < Math.log(12),
        "val loss " + sparse.valLoss());
    assertTrue(Files.size(dir.resolve("graph-block16.jsonl")) > 0);

    MstRun dense =
        GraphMstRun.train(
            "dense",
            new RunSetup(base, g, split, eval, steps, 1, dir, MstVariants.SEED),
            new Adam(2e-3),
            0.0);
    assertEquals(dense.denseFlops(), dense.flops(), 1e-6 * dense.flops());
    assertEquals(
        sparse.denseFlops(), dense.denseFlops(), 1e-6 * dense.flops(), "same dense reference");
    assertTrue(dense.valLoss() < Math.log(12), "dense val loss " + dense.valLoss());
  }
}
