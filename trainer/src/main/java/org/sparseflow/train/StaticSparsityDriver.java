package org.sparseflow.train;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsified;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.layers.sparsify.SparsifyReport;
import org.sparseflow.mst.core.FlopCounter;

/**
 * A fixed sparsity configuration (a SparsityConfig YAML/JSON without an {@code mst} section)
 * applied once with {@link Sparsify#apply}: the config switch of the layers module. Density is the
 * weighted density of the layers it made sparse together with those left dense; FLOPs use the GPT
 * FLOP model at each weight's density.
 */
public final class StaticSparsityDriver extends FixedFlopsDriver {

  private final SparsityConfig config;
  private final String label;
  private final Map<String, Double> densities = new LinkedHashMap<>();
  private double density = 1.0;

  public StaticSparsityDriver(SparsityConfig config, String label) {
    this.config = config;
    this.label = label;
  }

  /** Rewrites the model in place and records per-weight densities. */
  public TrainableModel sparsify(TrainableModel model) {
    Object m = model.unwrap();
    SparsifyReport report;
    if (m instanceof SameDiff sd) {
      Sparsified<SameDiff> s = Sparsify.apply(config, sd);
      report = s.report();
      model = new SameDiffModel(s.model(), model.vocabSize(), ((SameDiffModel) model).context());
    } else if (m instanceof ComputationGraph g) {
      Sparsified<ComputationGraph> s = Sparsify.apply(config, g);
      report = s.report();
      model = new Dl4jModel(s.model(), model.vocabSize());
    } else if (m instanceof MultiLayerNetwork n) {
      Sparsified<MultiLayerNetwork> s = Sparsify.apply(config, n);
      report = s.report();
      model = new Dl4jModel(s.model(), model.vocabSize());
    } else {
      throw new IllegalArgumentException("--sparsity: cannot sparsify a " + m.getClass().getName());
    }
    long total = 0;
    double kept = 0;
    for (SparsifyReport.Entry e : report.entries()) {
      double d = e.status() == SparsifyReport.Status.SPARSE ? e.measuredDensity() : 1.0;
      densities.put(e.name(), d);
      total += e.weightCount();
      kept += d * e.weightCount();
    }
    density = total == 0 ? 1.0 : kept / total;
    return model;
  }

  @Override
  public String description() {
    return "static (" + label + ")";
  }

  @Override
  double gptStepFlops(FlopCounter counter) {
    return counter.stepFlops(densities, null, Set.of());
  }

  @Override
  public double density() {
    return density;
  }

  @Override
  public byte[] saveState() {
    ObjectNode n = Json.object();
    n.put("density", density);
    n.set("densities", Json.MAPPER.valueToTree(densities));
    return Json.line(n).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void restoreState(byte[] state) {
    try {
      JsonNode n = Json.MAPPER.readTree(state);
      density = n.path("density").asDouble(1.0);
      densities.clear();
      n.path("densities")
          .fields()
          .forEachRemaining(e -> densities.put(e.getKey(), e.getValue().asDouble()));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "checkpoint: sparsity state is unreadable: " + e.getMessage(), e);
    }
  }
}
