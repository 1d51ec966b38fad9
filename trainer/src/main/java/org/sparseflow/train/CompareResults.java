package org.sparseflow.train;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * The {@code RESULT compare ...} lines of a comparison: per sparse variant its final validation
 * loss against dense's, the loss gap, the counted FLOP reduction, the measured wall-clock speed-up
 * of the training steps (sum of each run's {@code step_s}: evaluations and checkpoints excluded)
 * and the first evaluated step at which the variant reaches dense's final validation loss. With a
 * dense learning-rate sweep, "dense" is the sweep's best run by validation loss ({@code
 * dense_run=}). The test losses come from a part of the corpus that neither training, the
 * evaluations nor that choice looked at.
 */
final class CompareResults {
  private CompareResults() {}

  static List<String> lines(List<Comparison.Row> rows, Map<String, List<JsonNode>> metrics) {
    List<String> out = new ArrayList<>();
    if (rows.isEmpty()) {
      return out;
    }
    Comparison.Row dense = bestDense(rows);
    Trainer.Result d = dense.result();
    double denseStepS = stepSeconds(metrics.get(dense.name()));
    for (Comparison.Row row : rows) {
      if (row.baseline()) {
        continue;
      }
      Trainer.Result r = row.result();
      double stepS = stepSeconds(metrics.get(row.name()));
      double speedup =
          denseStepS > 0 && stepS > 0 ? denseStepS / stepS : d.wallSeconds() / r.wallSeconds();
      Double gap =
          r.valLoss() == null || d.valLoss() == null
              ? null
              : 100.0 * (r.valLoss() - d.valLoss()) / d.valLoss();
      Long reach = d.valLoss() == null ? null : reachStep(metrics.get(row.name()), d.valLoss());
      Double testGap =
          r.testLoss() == null || d.testLoss() == null
              ? null
              : 100.0 * (r.testLoss() - d.testLoss()) / d.testLoss();
      out.add(
          String.format(
              Locale.ROOT,
              "RESULT compare %s steps=%d val_loss=%s dense_val_loss=%s loss_gap_pct=%s"
                  + " flop_reduction=%.2f wall_speedup=%.2f reaches_dense_val_loss_at_step=%s"
                  + " train_s=%.1f dense_train_s=%.1f dense_run=%s dense_runs=%d"
                  + " test_loss=%s dense_test_loss=%s test_gap_pct=%s",
              row.name(),
              r.step(),
              fmt(r.valLoss()),
              fmt(d.valLoss()),
              gap == null ? "n/a" : String.format(Locale.ROOT, "%.2f", gap),
              d.flops() / r.flops(),
              speedup,
              reach == null ? "never" : reach.toString(),
              stepS,
              denseStepS,
              dense.name(),
              rows.stream().filter(Comparison.Row::baseline).count(),
              fmt(r.testLoss()),
              fmt(d.testLoss()),
              testGap == null ? "n/a" : String.format(Locale.ROOT, "%.2f", testGap)));
    }
    return out;
  }

  /**
   * The dense run the sparse runs are measured against: of the baseline rows, the one with the
   * lowest final validation loss (the first one when none has a validation loss).
   */
  static Comparison.Row bestDense(List<Comparison.Row> rows) {
    Comparison.Row best = null;
    for (Comparison.Row r : rows) {
      if (!r.baseline()) {
        continue;
      }
      if (best == null
          || r.result().valLoss() != null
              && (best.result().valLoss() == null
                  || r.result().valLoss() < best.result().valLoss())) {
        best = r;
      }
    }
    if (best == null) {
      throw new IllegalStateException("a comparison has no dense run");
    }
    return best;
  }

  /** The best dense run followed by the sparse runs (what gets simulated). */
  static List<Comparison.Row> bestDenseAndSparse(List<Comparison.Row> rows) {
    List<Comparison.Row> out = new ArrayList<>();
    out.add(bestDense(rows));
    rows.stream().filter(r -> !r.baseline()).forEach(out::add);
    return out;
  }

  private static String fmt(Double v) {
    return v == null ? "n/a" : String.format(Locale.ROOT, "%.4f", v);
  }

  /** Sum of the per-step training times; 0 when the log has none (older runs). */
  static double stepSeconds(List<JsonNode> log) {
    double s = 0;
    for (JsonNode n : log == null ? List.<JsonNode>of() : log) {
      s += n.path("step_s").asDouble(0);
    }
    return s;
  }

  /** First logged step whose validation loss is at or below {@code target}; null if none. */
  static Long reachStep(List<JsonNode> log, double target) {
    for (JsonNode n : log == null ? List.<JsonNode>of() : log) {
      if (n.has("val_loss")
          && n.path("step").asLong() > 0
          && n.get("val_loss").asDouble() <= target) {
        return n.path("step").asLong();
      }
    }
    return null;
  }
}
