package org.sparseflow.mst.core;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.shade.jackson.databind.SerializationFeature;

/**
 * One topology update, as written (one JSON line each) to the MST log. Public fields, serialised by
 * Jackson.
 */
public final class UpdateRecord {
  /** {@link #kind} of a topology update (prune and regrow every ΔT steps). */
  public static final String TOPOLOGY = "topology";

  /**
   * {@link #kind} of a prune-only step between topology updates (see MstConfig#getPruneInterval).
   */
  public static final String PRUNE = "prune";

  public String kind = TOPOLOGY;
  public long step;
  public String phase;
  public double targetSparsity;
  public double dropFraction;
  public double globalDensity;
  public Map<String, Double> layerDensity = new LinkedHashMap<>();
  public Map<String, Long> pruned = new LinkedHashMap<>();
  public Map<String, Long> grown = new LinkedHashMap<>();
  public long prunedTotal;
  public long grownTotal;
  public List<String> attentionPatterns;
  public double flops;
  public double denseFlops;
  public double loss = Double.NaN;

  public String toJsonLine() {
    return MstConfigIO.text(
        () ->
            MstConfigIO.JSON
                .writer()
                .without(SerializationFeature.INDENT_OUTPUT)
                .writeValueAsString(this));
  }

  public static UpdateRecord fromJson(String line) {
    try {
      return MstConfigIO.JSON.readValue(line, UpdateRecord.class);
    } catch (IOException e) {
      throw new IllegalArgumentException("invalid MST log line: " + e.getMessage(), e);
    }
  }
}
