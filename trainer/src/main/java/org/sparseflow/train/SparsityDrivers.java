package org.sparseflow.train;

import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * Turns {@code --sparsity} (a preset name or a YAML/JSON file) into a sparsified model and the
 * driver that runs it during training. No sparsity = the dense model and {@link DenseDriver}.
 */
public final class SparsityDrivers {

  private static final org.nd4j.shade.jackson.databind.ObjectMapper YAML =
      new org.nd4j.shade.jackson.databind.ObjectMapper(
          new org.nd4j.shade.jackson.dataformat.yaml.YAMLFactory());

  /** A sparsified model with its driver. */
  public record Applied(TrainableModel model, SparsityDriver driver) {}

  /**
   * A validated sparsity choice, resolved before any model is built so that config errors come
   * first.
   */
  public interface Resolved {
    /** Sparsifies a freshly built model and returns the driver for a new run. */
    Applied apply(TrainableModel model, TrainConfig config);

    /** The driver for a model restored from a checkpoint (already sparse). */
    SparsityDriver restore(TrainableModel model, TrainConfig config);
  }

  private SparsityDrivers() {}

  public static Resolved resolve(TrainConfig config) {
    if (config.sparsity == null || config.sparsity.isBlank() || config.sparsity.equals("dense")) {
      return new Resolved() {
        @Override
        public Applied apply(TrainableModel model, TrainConfig c) {
          return new Applied(model, new DenseDriver());
        }

        @Override
        public SparsityDriver restore(TrainableModel model, TrainConfig c) {
          return new DenseDriver();
        }
      };
    }
    String label = java.nio.file.Path.of(config.sparsity).getFileName().toString();
    org.sparseflow.layers.config.SparsityConfig fixed = loadStatic(config.sparsity);
    if (fixed != null) {
      return new Resolved() {
        @Override
        public Applied apply(TrainableModel model, TrainConfig c) {
          StaticSparsityDriver d = new StaticSparsityDriver(fixed, label);
          return new Applied(d.sparsify(model), d);
        }

        @Override
        public SparsityDriver restore(TrainableModel model, TrainConfig c) {
          return new StaticSparsityDriver(fixed, label);
        }
      };
    }
    org.sparseflow.mst.core.MstConfig mst = loadMst(config.sparsity);
    return new Resolved() {
      @Override
      public Applied apply(TrainableModel model, TrainConfig c) {
        return new Applied(model, new MstDriver(mst, label));
      }

      @Override
      public SparsityDriver restore(TrainableModel model, TrainConfig c) {
        return new MstDriver(mst, label);
      }
    };
  }

  /**
   * A SparsityConfig file (layers module: pattern, sparsity, distribution, include/exclude...) with
   * no MST schedule, or null when {@code spec} is a preset, an MST file, or a SparsityConfig with
   * an {@code mst} section.
   */
  static org.sparseflow.layers.config.SparsityConfig loadStatic(String spec) {
    java.nio.file.Path file = java.nio.file.Path.of(spec);
    if (presetNames().contains(spec.toLowerCase(java.util.Locale.ROOT))
        || !java.nio.file.Files.isRegularFile(file)) {
      return null;
    }
    JsonNode tree;
    try {
      String text = java.nio.file.Files.readString(file);
      tree = (spec.endsWith(".json") ? Json.MAPPER : YAML).readTree(text);
    } catch (java.io.IOException e) {
      return null; // loadMst reports unreadable or malformed files
    }
    if (tree == null
        || !tree.isObject()
        || tree.has("mst")
        || tree.has("schedule")
        || tree.has("deltaT")) {
      return null;
    }
    try {
      return org.sparseflow.layers.config.SparsityConfig.load(file);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("--sparsity: " + e.getMessage());
    }
  }

  /** Preset names shipped with mst-scheduler. */
  public static java.util.List<String> presetNames() {
    return org.sparseflow.mst.core.MstConfig.PRESETS;
  }

  /**
   * A preset name, an MST YAML/JSON file, or a SparsityConfig file whose {@code mst} section holds
   * the schedule. Errors name the option, the value and what is allowed.
   */
  static org.sparseflow.mst.core.MstConfig loadMst(String spec) {
    java.util.List<String> presets = presetNames();
    if (presets.contains(spec.toLowerCase(java.util.Locale.ROOT))) {
      return org.sparseflow.mst.core.MstConfig.preset(spec.toLowerCase(java.util.Locale.ROOT));
    }
    java.nio.file.Path file = java.nio.file.Path.of(spec);
    boolean looksLikeFile =
        spec.contains("/")
            || spec.contains(java.io.File.separator)
            || spec.matches(".*\\.(ya?ml|json)$");
    if (!java.nio.file.Files.exists(file)) {
      if (looksLikeFile) {
        throw new IllegalArgumentException("--sparsity: file " + spec + " does not exist");
      }
      throw new IllegalArgumentException(
          "--sparsity: unknown preset '"
              + spec
              + "'; allowed: "
              + String.join(", ", presets)
              + ", or a YAML/JSON file");
    }
    String text;
    try {
      text = java.nio.file.Files.readString(file);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("--sparsity: cannot read " + spec + ": " + e.getMessage());
    }
    boolean json = spec.endsWith(".json");
    JsonNode tree;
    try {
      tree = (json ? Json.MAPPER : YAML).readTree(text);
    } catch (java.io.IOException e) {
      String msg = e.getMessage() == null ? e.toString() : e.getMessage().split("\\R")[0];
      throw new IllegalArgumentException(
          "--sparsity: " + spec + " is not valid " + (json ? "JSON" : "YAML") + ": " + msg);
    }
    if (tree == null || !tree.isObject()) {
      throw new IllegalArgumentException(
          "--sparsity: "
              + spec
              + " must hold a "
              + (json ? "JSON" : "YAML")
              + " mapping (an MST schedule or a sparsity config with an 'mst' section)");
    }
    try {
      if (tree.has("mst") && tree.get("mst").isObject()) {
        return org.sparseflow.mst.core.MstConfig.fromJsonTree(tree.get("mst"));
      }
      return json
          ? org.sparseflow.mst.core.MstConfig.fromJson(text)
          : org.sparseflow.mst.core.MstConfig.fromYaml(text);
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new IllegalArgumentException("--sparsity: " + spec + ": " + e.getMessage());
    }
  }
}
