package org.sparseflow.train;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.ops.config.StrictConfigReader;

/**
 * Turns {@code --sparsity} (a preset name or a YAML/JSON file) into a sparsified model and the
 * driver that runs it during training. No sparsity = the dense model and {@link DenseDriver}.
 */
public final class SparsityDrivers {

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
    boolean dense =
        config.sparsity == null || config.sparsity.isBlank() || config.sparsity.equals("dense");
    SparsityConfig fixed = dense ? null : loadStatic(config.sparsity);
    if ((config.mstSparseStart || "packed".equals(config.mstStorage)) && (dense || fixed != null)) {
      throw new IllegalArgumentException(
          "--storage / --sparse-start: they apply to MST runs, but --sparsity is "
              + (dense
                  ? "dense"
                  : config.sparsity + " (a static sparsity config: set storage: in it)")
              + "; allowed: an MST preset "
              + MstConfig.PRESETS
              + " or an MST config file");
    }
    if (config.mstDensity != null && (dense || fixed != null)) {
      throw new IllegalArgumentException(
          "--density "
              + config.mstDensity
              + ": only MST sparsity takes a target density, but --sparsity is "
              + (dense ? "dense" : config.sparsity + " (a static sparsity config)")
              + "; allowed: an MST preset "
              + MstConfig.PRESETS
              + " or an MST config file");
    }
    if (dense) {
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
    String label = Path.of(config.sparsity).getFileName().toString();
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
    MstConfig loaded =
        config.mstDensity == null
            ? loadMst(config.sparsity)
            : loadMst(config.sparsity).withTargetDensity(config.mstDensity);
    MstConfig mst = config.mstSparseStart ? loaded.withSparseStart() : loaded;
    boolean packed = "packed".equals(config.mstStorage);
    return new Resolved() {
      @Override
      public Applied apply(TrainableModel model, TrainConfig c) {
        // a SameDiff model is rewritten into SparseFlow ops, so MST's sparsity saves time
        MstConfig effective =
            model.unwrap() instanceof SameDiff sd
                ? SparseExecution.rewrite(sd, mst, packed, c.steps)
                : SparseExecution.dl4jStorage(packed, mst, model.unwrap());
        return new Applied(model, new MstDriver(effective, label));
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
   * an {@code mst} section. Files are read strictly ({@link StrictConfigReader}).
   */
  static SparsityConfig loadStatic(String spec) {
    Path file = Path.of(spec);
    if (presetNames().contains(spec.toLowerCase(Locale.ROOT)) || !Files.isRegularFile(file)) {
      return null;
    }
    JsonNode tree = readTree(spec, file);
    if (!tree.isObject() || tree.has("mst") || tree.has("schedule") || tree.has("deltaT")) {
      return null;
    }
    try {
      return SparsityConfig.load(file);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("--sparsity: " + e.getMessage());
    }
  }

  /** Preset names shipped with mst-scheduler. */
  public static List<String> presetNames() {
    return MstConfig.PRESETS;
  }

  /**
   * Checks the {@code mst} section of a sparsity config read from {@code source} (no-op when there
   * is none); errors name the file and the field under {@code mst}.
   */
  public static void validateMstSection(SparsityConfig config, String source) {
    JsonNode mst = config.getMst();
    if (mst != null && !mst.isNull()) {
      MstConfig.fromTree(mst, "Sparsity config", source, "mst");
    }
  }

  private static JsonNode readTree(String spec, Path file) {
    try {
      return StrictConfigReader.readFile(file, "Sparsity config");
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--sparsity: " + e.getMessage(), e);
    }
  }

  /**
   * A preset name, an MST YAML/JSON file, or a SparsityConfig file whose {@code mst} section holds
   * the schedule. Errors name the option, the file, the field, the value and what is allowed.
   */
  static MstConfig loadMst(String spec) {
    List<String> presets = presetNames();
    if (presets.contains(spec.toLowerCase(Locale.ROOT))) {
      return MstConfig.preset(spec.toLowerCase(Locale.ROOT));
    }
    Path file = Path.of(spec);
    boolean looksLikeFile =
        spec.contains("/") || spec.contains(File.separator) || spec.matches(".*\\.(ya?ml|json)$");
    if (!Files.exists(file)) {
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
    JsonNode tree = readTree(spec, file);
    if (!tree.isObject()) {
      throw new IllegalArgumentException(
          "--sparsity: "
              + spec
              + " holds a "
              + tree.getNodeType().toString().toLowerCase(Locale.ROOT)
              + "; allowed: a mapping (an MST schedule, or a sparsity config with an 'mst'"
              + " section)");
    }
    try {
      if (tree.has("mst")) {
        // the whole file is a sparsity config: check its other fields too
        SparsityConfig.load(file);
        return MstConfig.fromTree(tree.get("mst"), "Sparsity config", spec, "mst");
      }
      return MstConfig.fromTree(tree, "MST config", spec, "");
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new IllegalArgumentException("--sparsity: " + e.getMessage(), e);
    }
  }
}
