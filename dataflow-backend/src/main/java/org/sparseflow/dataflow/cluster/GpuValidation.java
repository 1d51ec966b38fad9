package org.sparseflow.dataflow.cluster;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.dataflow.hw.ClusterSpec;

/**
 * Published measured training throughputs (a validation file) and the model's error on them. The
 * file is read strictly: unknown or missing fields, wrong types and configurations that do not fit
 * the model are errors naming the file, the entry and the field.
 */
public final class GpuValidation {
  public static final String BUILTIN = "/org/sparseflow/dataflow/validation/megatron-a100.json";

  static final Set<String> TOP = Set.of("description", "cluster", "metric", "configs");
  static final Set<String> ENTRY =
      Set.of(
          "name",
          "parametersBillion",
          "heads",
          "hidden",
          "layers",
          "seq",
          "vocab",
          "tensorParallel",
          "pipelineParallel",
          "gpus",
          "globalBatch",
          "microBatch",
          "virtualStages",
          "dataParallelImpl",
          "recompute",
          "publishedTflopsPerGpu",
          "role",
          "source");

  /** One published measurement. */
  public record Entry(
      TransformerShape shape,
      ParallelConfig config,
      double publishedTflopsPerGpu,
      boolean calibration,
      String source) {}

  /** The model against one measurement. */
  public record Row(Entry entry, GpuTrainingResult result) {
    public double simulatedTflopsPerGpu() {
      return result.megatronTflopsPerGpu();
    }

    /** Signed error of the simulation, percent of the published figure. */
    public double errorPct() {
      return 100
          * (simulatedTflopsPerGpu() - entry.publishedTflopsPerGpu())
          / entry.publishedTflopsPerGpu();
    }
  }

  /** Error summary over a set of rows. */
  public record Summary(double meanAbsErrPct, double maxAbsErrPct, int configs) {
    static Summary of(List<Row> rows) {
      double sum = 0;
      double max = 0;
      for (Row r : rows) {
        double e = Math.abs(r.errorPct());
        sum += e;
        max = Math.max(max, e);
      }
      return new Summary(rows.isEmpty() ? 0 : sum / rows.size(), max, rows.size());
    }
  }

  private final String origin;
  private final String clusterId;
  private final List<Entry> entries;

  private GpuValidation(String origin, JsonNode root) {
    this.origin = origin;
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(origin + ": not a JSON object");
    }
    rejectUnknown(root, TOP, "top level");
    this.clusterId = text(root, "cluster", "top level");
    JsonNode cs = root.get("configs");
    if (cs == null || !cs.isArray() || cs.size() == 0) {
      throw new IllegalArgumentException(origin + ": 'configs' must be a non-empty array");
    }
    List<Entry> list = new ArrayList<>();
    for (JsonNode e : cs) {
      list.add(entry(e));
    }
    this.entries = List.copyOf(list);
  }

  public static GpuValidation builtin() {
    try (InputStream in = GpuValidation.class.getResourceAsStream(BUILTIN)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + BUILTIN);
      }
      return new GpuValidation(BUILTIN, new ObjectMapper().readTree(in));
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + BUILTIN + ": " + e.getMessage(), e);
    }
  }

  public static GpuValidation fromFile(Path file) {
    try {
      return fromJson(file.toString(), Files.readString(file));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "validation file '" + file + "' cannot be read: " + e.getMessage(), e);
    }
  }

  public static GpuValidation fromJson(String origin, String json) {
    try {
      return new GpuValidation(origin, new ObjectMapper().readTree(json));
    } catch (IOException e) {
      throw new IllegalArgumentException(origin + ": invalid JSON: " + e.getMessage(), e);
    }
  }

  public List<Entry> entries() {
    return entries;
  }

  public String clusterId() {
    return clusterId;
  }

  /** Runs the model on every entry. */
  public List<Row> run(ClusterSpec cluster) {
    GpuTrainingModel model = new GpuTrainingModel(cluster);
    List<Row> rows = new ArrayList<>();
    for (Entry e : entries) {
      try {
        rows.add(new Row(e, model.simulate(e.shape(), e.config())));
      } catch (IllegalArgumentException ex) {
        throw new IllegalArgumentException(
            origin + ": entry '" + e.shape().name() + "': " + ex.getMessage(), ex);
      }
    }
    return rows;
  }

  public static Summary summary(List<Row> rows) {
    return Summary.of(rows);
  }

  public static Summary summary(List<Row> rows, boolean calibration) {
    return Summary.of(rows.stream().filter(r -> r.entry().calibration() == calibration).toList());
  }

  /**
   * The training GEMM efficiency that minimises the mean absolute error on the calibration entries
   * only (grid search in steps of 0.001 up to the MAMF bound). Held-out entries are not looked at.
   */
  public double fitTrainingGemmEfficiency(ClusterSpec cluster) {
    double bound = cluster.achievableMatmulFlops() / cluster.gpu().peakFlops();
    double best = Double.NaN;
    double bestErr = Double.POSITIVE_INFINITY;
    for (int i = 300; i <= Math.floor(bound * 1000); i++) {
      double eff = i / 1000.0;
      List<Row> rows = calibrationOnly().run(cluster.withTrainingGemmEfficiency(eff));
      double err = Summary.of(rows).meanAbsErrPct();
      if (err < bestErr) {
        bestErr = err;
        best = eff;
      }
    }
    return best;
  }

  private GpuValidation calibrationOnly() {
    return new GpuValidation(
        origin, clusterId, entries.stream().filter(Entry::calibration).toList());
  }

  private GpuValidation(String origin, String clusterId, List<Entry> entries) {
    this.origin = origin;
    this.clusterId = clusterId;
    this.entries = entries;
  }

  private Entry entry(JsonNode e) {
    if (!e.isObject()) {
      throw new IllegalArgumentException(origin + ": every entry of 'configs' must be an object");
    }
    String name = e.has("name") && e.get("name").isTextual() ? e.get("name").asText() : "?";
    String where = "entry '" + name + "'";
    rejectUnknown(e, ENTRY, where);
    text(e, "name", where);
    TransformerShape shape =
        wrap(
            where,
            () ->
                new TransformerShape(
                    name,
                    integer(e, "layers", where),
                    integer(e, "hidden", where),
                    integer(e, "heads", where),
                    4 * integer(e, "hidden", where),
                    integer(e, "vocab", where),
                    integer(e, "seq", where)));
    int t = integer(e, "tensorParallel", where);
    int p = integer(e, "pipelineParallel", where);
    int gpus = integer(e, "gpus", where);
    if (gpus % (t * p) != 0) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "%s: %s: gpus %d is not a multiple of tensorParallel %d x pipelineParallel %d",
              origin,
              where,
              gpus,
              t,
              p));
    }
    String ddp = text(e, "dataParallelImpl", where);
    if (!ddp.equals("torch") && !ddp.equals("local")) {
      throw new IllegalArgumentException(
          origin + ": " + where + ": dataParallelImpl '" + ddp + "' must be torch or local");
    }
    String role = text(e, "role", where);
    if (!role.equals("calibration") && !role.equals("heldout")) {
      throw new IllegalArgumentException(
          origin + ": " + where + ": role '" + role + "' must be calibration or heldout");
    }
    ParallelConfig c =
        new ParallelConfig(
            t,
            p,
            gpus / (t * p),
            integer(e, "microBatch", where),
            integer(e, "globalBatch", where),
            integer(e, "virtualStages", where),
            text(e, "recompute", where),
            ddp.equals("torch"));
    wrap(where, () -> c.validate(shape, gpus));
    double published = number(e, "publishedTflopsPerGpu", where);
    if (!(published > 0)) {
      throw new IllegalArgumentException(
          origin + ": " + where + ": publishedTflopsPerGpu must be > 0, got " + published);
    }
    number(e, "parametersBillion", where);
    return new Entry(shape, c, published, role.equals("calibration"), text(e, "source", where));
  }

  private <T> T wrap(String where, Supplier<T> s) {
    try {
      return s.get();
    } catch (IllegalArgumentException ex) {
      throw new IllegalArgumentException(origin + ": " + where + ": " + ex.getMessage(), ex);
    }
  }

  private void rejectUnknown(JsonNode n, Set<String> allowed, String where) {
    Iterator<String> it = n.fieldNames();
    while (it.hasNext()) {
      String f = it.next();
      if (!allowed.contains(f)) {
        throw new IllegalArgumentException(
            origin + ": " + where + ": unknown field '" + f + "'; allowed: " + allowed);
      }
    }
  }

  private JsonNode required(JsonNode n, String field, String where) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(
          origin + ": " + where + ": missing required field '" + field + "'");
    }
    return v;
  }

  private String text(JsonNode n, String field, String where) {
    return typed(n, field, where, JsonNode::isTextual, "a string").asText();
  }

  private double number(JsonNode n, String field, String where) {
    return typed(n, field, where, JsonNode::isNumber, "a number").asDouble();
  }

  private int integer(JsonNode n, String field, String where) {
    return typed(n, field, where, GpuValidation::positiveInt, "an integer >= 1").asInt();
  }

  private static boolean positiveInt(JsonNode v) {
    return v.isIntegralNumber() && v.asLong() >= 1 && v.asLong() <= Integer.MAX_VALUE;
  }

  /** The required {@code field} of {@code n}; an error naming it unless it is {@code what}. */
  private JsonNode typed(
      JsonNode n, String field, String where, Predicate<JsonNode> ok, String what) {
    JsonNode v = required(n, field, where);
    if (!ok.test(v)) {
      throw new IllegalArgumentException(
          origin + ": " + where + ": field '" + field + "' must be " + what + ", got " + v);
    }
    return v;
  }
}
