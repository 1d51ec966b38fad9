package org.sparseflow.train;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ArrayNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.slf4j.LoggerFactory;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.mst.report.MstPlots;

/**
 * Runs Mixed Sparsity Training (or any MST-family preset: rigl, set, gmp, static) through {@link
 * MstListener} on the model. Density and FLOPs come from the MST core (exact FLOP formulas of the
 * mst-scheduler module); its state and topology-update records travel in the checkpoint.
 */
public final class MstDriver implements SparsityDriver {

  private final MstConfig config;
  private final String label;
  private MstListener listener;
  private MstState pendingState;
  private final List<UpdateRecord> records = new ArrayList<>();
  private double density = 1.0;
  private double lastCumulativeFlops;
  private String phase = "";

  public MstDriver(MstConfig config, String label) {
    this.config = config;
    this.label = label;
  }

  @Override
  public String description() {
    return "mst (" + label + ")";
  }

  public MstListener listener() {
    return listener;
  }

  @Override
  public void attach(TrainableModel model, TrainConfig c) {
    MstConfig effective = config.withTotalSteps(c.steps);
    if (c.mstDeltaT != null) {
      effective.setDeltaT(c.mstDeltaT);
      effective.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    }
    listener = pendingState != null ? MstListener.resume(pendingState) : new MstListener(effective);
    var gpt = GptFlops.architecture(c, model.vocabSize());
    if (gpt != null) {
      listener.flopCounter(GptFlops.counter(gpt, c.batchSize), Map.of(), c.contextLength);
    }
    listener.onUpdate(
        r -> {
          records.add(r);
          density = r.globalDensity;
          phase = r.phase;
        });
    Object m = model.unwrap();
    if (m instanceof SameDiff sd) {
      listener.addTo(sd);
    } else if (m instanceof ComputationGraph g) {
      g.addListeners(listener);
    } else if (m instanceof MultiLayerNetwork n) {
      n.addListeners(listener);
    } else {
      throw new IllegalArgumentException(
          "--sparsity: MST cannot drive a " + m.getClass().getName());
    }
    if (pendingState != null) {
      lastCumulativeFlops = pendingState.getCumulativeFlops();
    }
    pendingState = null;
  }

  /** A DL4J model whose packed weights want other block slots continues on the rebuilt network. */
  @Override
  public void afterFit(TrainableModel model) {
    if (model instanceof Dl4jModel d && d.unwrap() instanceof Model m) {
      Model next = listener.nextModel(m);
      if (next != m) {
        d.replace(next);
      }
    }
  }

  @Override
  public double density() {
    return density;
  }

  @Override
  public double stepFlops(long step) {
    double cum = listener.core().cumulativeFlops();
    double f = cum - lastCumulativeFlops;
    lastCumulativeFlops = cum;
    if (step == 0 && records.isEmpty()) {
      // first step: masks were just created; take the density from the core
      UpdateRecord r = listener.core().snapshotRecord();
      density = r.globalDensity;
      phase = r.phase;
    }
    return f;
  }

  @Override
  public boolean flopsAreEstimate() {
    return false;
  }

  @Override
  public Map<String, Object> stepMetrics() {
    Map<String, Object> m = new LinkedHashMap<>();
    if (phase != null && !phase.isEmpty()) {
      m.put("phase", phase);
    }
    return m;
  }

  @Override
  public byte[] saveState() {
    ObjectNode root = Json.object();
    try {
      root.set("mst", Json.MAPPER.readTree(listener.state().toJson()));
      ArrayNode arr = root.putArray("records");
      for (UpdateRecord r : records) {
        arr.add(Json.MAPPER.readTree(r.toJsonLine()));
      }
      root.put("density", density);
      root.put("phase", phase);
    } catch (IOException e) {
      throw new IllegalStateException("cannot serialise MST state: " + e.getMessage(), e);
    }
    return Json.line(root).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void restoreState(byte[] state) {
    try {
      JsonNode root = Json.MAPPER.readTree(state);
      pendingState = MstState.fromJson(Json.line(root.get("mst")));
      records.clear();
      for (JsonNode r : root.path("records")) {
        records.add(UpdateRecord.fromJson(Json.line(r)));
      }
      density = root.path("density").asDouble(1.0);
      phase = root.path("phase").asText("");
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "checkpoint: MST state is unreadable: " + e.getMessage(), e);
    }
  }

  @Override
  public void writePlots(Path dir) {
    if (records.isEmpty()) {
      return;
    }
    try {
      MstPlots.sparsitySchedule(
          config.getSchedule(), records, dir.resolve("mst_sparsity_schedule.png"));
      MstPlots.densityHeatMap(records, dir.resolve("mst_density_heatmap.png"));
    } catch (IOException | RuntimeException e) {
      LoggerFactory.getLogger(MstDriver.class).warn("MST plots failed: {}", e.toString());
    }
  }

  /** The topology-update records so far (for notebooks and reports). */
  public List<UpdateRecord> records() {
    return records;
  }
}
