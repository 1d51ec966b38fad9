package org.sparseflow.bench.mst;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.train.AtomicFiles;
import org.sparseflow.train.Json;

/**
 * The dense baseline of the MST benchmark as a file ({@code --reuse-dense}, {@code --wait-dense}):
 * val loss, time and loss-vs-FLOPs curve with the settings it was trained under, so a later run
 * compares against it only when they match.
 */
final class DenseBaseline {
  static final String DENSE_RESULT = "dense-result.json";
  static final String DENSE_GRAPH_RESULT = "dense-graph-result.json";

  /**
   * The training settings a reused dense baseline must share with the MST runs it is compared with.
   */
  record TrainSettings(
      int steps,
      double lr,
      String lrDecay,
      double gradClip,
      String corpusSha256,
      long seed,
      String size) {

    /** Settings on the bundled corpus, gpt-mini, the default seed. */
    TrainSettings(int steps, double lr, String lrDecay, double gradClip) {
      this(steps, lr, lrDecay, gradClip, Corpus.bundled().sha256(), MstVariants.SEED, "gpt-mini");
    }
  }

  private DenseBaseline() {}

  /** Saves the dense baseline with the settings it was trained under (atomically). */
  static void write(Path file, MstRun r, TrainSettings t, int evalPoints) throws IOException {
    ObjectNode n = Json.object();
    n.put("steps", t.steps())
        .put("lr", t.lr())
        .put("lrDecay", t.lrDecay())
        .put("gradClip", t.gradClip())
        .put("corpusSha256", t.corpusSha256())
        .put("evalPoints", evalPoints)
        .put("seed", t.seed())
        .put("size", t.size())
        .put("batch", MstVariants.BATCH)
        .put("valLoss", r.valLoss())
        .put("flops", r.flops())
        .put("denseFlops", r.denseFlops())
        .put("trainSeconds", r.trainSeconds())
        .put("overheadPct", r.overheadPct());
    n.set("curveFlops", Json.MAPPER.valueToTree(r.lossVsFlops()[0]));
    n.set("curveLoss", Json.MAPPER.valueToTree(r.lossVsFlops()[1]));
    AtomicFiles.writeString(file, Json.pretty(n));
  }

  /**
   * Waits (polling, up to 3 hours) for the dense baseline a dense run side by side is about to
   * write.
   */
  static void await(Path file) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.HOURS.toNanos(3);
    boolean told = false;
    while (!Files.isRegularFile(file) && System.nanoTime() < deadline) {
      if (!told) {
        System.out.println(
            "  --wait-dense: waiting for " + file + " (written when the dense run ends)");
        told = true;
      }
      Thread.sleep(20_000);
    }
  }

  /** Reads a baseline written by {@link #write}; refuses one trained under other settings. */
  static MstRun read(Path file, TrainSettings t) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "--reuse-dense: "
              + file
              + " does not exist; run the dense variant once"
              + " with the same --out first");
    }
    JsonNode n = Json.read(file);
    // eval points are not compared: evaluation does not change training, only the curve's
    // resolution
    String decay =
        n.has("lrDecay") ? n.get("lrDecay").asText() : "none"; // files before --lr-decay: constant
    double clip =
        n.has("gradClip") ? n.get("gradClip").asDouble() : 0.0; // files before --grad-clip: off
    // files written before --corpus: the bundled corpus
    String corpus =
        n.has("corpusSha256") ? n.get("corpusSha256").asText() : Corpus.bundled().sha256();
    if (!corpus.equals(t.corpusSha256())) {
      throw new IllegalArgumentException(
          "--reuse-dense: "
              + file
              + " was trained on a corpus with sha256 "
              + corpus
              + "; this run's --corpus has sha256 "
              + t.corpusSha256()
              + "; allowed: the same corpus (or a new --out)");
    }
    if (n.get("steps").asInt() != t.steps()
        || n.get("lr").asDouble() != t.lr()
        || !decay.equals(t.lrDecay())
        || clip != t.gradClip()
        || n.get("seed").asLong() != t.seed()
        || !n.path("size").asText("gpt-mini").equals(t.size())
        || n.get("batch").asInt() != MstVariants.BATCH) {
      throw new IllegalArgumentException(
          "--reuse-dense: "
              + file
              + " was trained with steps="
              + n.get("steps")
              + " lr="
              + n.get("lr")
              + " lr_decay="
              + decay
              + " grad_clip="
              + clip
              + " seed="
              + n.get("seed")
              + " size="
              + n.path("size").asText("gpt-mini")
              + " batch="
              + n.get("batch")
              + "; this run needs steps="
              + t.steps()
              + " lr="
              + t.lr()
              + " lr_decay="
              + t.lrDecay()
              + " grad_clip="
              + t.gradClip()
              + " seed="
              + t.seed()
              + " size="
              + t.size()
              + " batch="
              + MstVariants.BATCH);
    }
    double[][] curve = new double[2][];
    for (int c = 0; c < 2; c++) {
      JsonNode a = n.get(c == 0 ? "curveFlops" : "curveLoss");
      curve[c] = new double[a.size()];
      for (int i = 0; i < a.size(); i++) {
        curve[c][i] = a.get(i).asDouble();
      }
    }
    return new MstRun(
        "dense",
        n.get("valLoss").asDouble(),
        n.get("flops").asDouble(),
        n.get("denseFlops").asDouble(),
        n.get("trainSeconds").asDouble(),
        n.get("overheadPct").asDouble(),
        curve,
        List.of(),
        MstConfig.preset("dense"));
  }
}
