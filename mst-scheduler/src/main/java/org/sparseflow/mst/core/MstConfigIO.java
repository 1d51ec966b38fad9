package org.sparseflow.mst.core;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLFactory;
import org.sparseflow.ops.config.JsonText;
import org.sparseflow.ops.config.StrictConfigReader;
import org.sparseflow.ops.config.StrictConfigReader.Format;

/**
 * Reading and writing {@link MstConfig}: shipped presets, YAML/JSON files and strings, and the
 * {@code mst} section of a sparsity config, all through the strict reader (duplicate keys, unknown
 * fields, size and encoding checked), then bound and validated.
 */
final class MstConfigIO {
  private static final String WHAT = "MST config";
  static final ObjectMapper JSON = mapper(new ObjectMapper());
  private static final ObjectMapper YAML = mapper(new ObjectMapper(new YAMLFactory()));

  private static ObjectMapper mapper(ObjectMapper m) {
    StrictConfigReader.strict(m);
    m.configure(SerializationFeature.INDENT_OUTPUT, true);
    return m;
  }

  static MstConfig preset(String presetName) {
    if (presetName == null || !MstConfig.PRESETS.contains(presetName.toLowerCase(Locale.ROOT))) {
      throw Args.bad("preset", presetName, MstConfig.PRESETS.toString());
    }
    String res = "/org/sparseflow/mst/presets/" + presetName.toLowerCase(Locale.ROOT) + ".yaml";
    try (InputStream in = MstConfig.class.getResourceAsStream(res)) {
      if (in == null) {
        throw new IllegalStateException("preset resource missing from the jar: " + res);
      }
      JsonNode tree = StrictConfigReader.readBytes(in.readAllBytes(), res, Format.YAML, WHAT);
      return fromTree(tree, WHAT, res, "");
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + res, e);
    }
  }

  /**
   * Loads a preset name, or a .yaml/.yml/.json file path (read strictly, see {@link #fromTree}).
   */
  static MstConfig load(String presetOrPath) {
    if (MstConfig.PRESETS.contains(presetOrPath.toLowerCase(Locale.ROOT))) {
      return preset(presetOrPath);
    }
    Path file = Path.of(presetOrPath);
    if (!Files.isRegularFile(file)) {
      throw Args.bad(
          "mst config",
          presetOrPath,
          "a preset " + MstConfig.PRESETS + " or an existing YAML/JSON file");
    }
    return fromTree(StrictConfigReader.readFile(file, WHAT), WHAT, presetOrPath, "");
  }

  static MstConfig fromYaml(String yaml) {
    return fromText(yaml, "<yaml string>", Format.YAML);
  }

  static MstConfig fromJson(String json) {
    return fromText(json, "<json string>", Format.JSON);
  }

  private static MstConfig fromText(String text, String source, Format format) {
    return fromTree(StrictConfigReader.readText(text, source, format, WHAT), WHAT, source, "");
  }

  /** From the opaque {@code mst} JSON tree of a SparsityConfig. */
  static MstConfig fromJsonTree(JsonNode node) {
    return fromTree(node, WHAT, "<tree>", "mst");
  }

  /**
   * The {@code mst} section of a dl4j-sparse-layers {@code SparsityConfig} (pass {@code
   * config.getMst()}), or the named preset when the section is absent.
   */
  static MstConfig fromSparsityConfigSection(JsonNode mstSection, String presetIfAbsent) {
    return mstSection == null || mstSection.isNull()
        ? preset(presetIfAbsent)
        : fromJsonTree(mstSection);
  }

  /**
   * Binds and validates a checked document tree (see {@code StrictConfigReader}). Errors are one
   * line naming {@code what} and {@code source} (e.g. "Sparsity config runs/a.yaml"), the field
   * under {@code pathPrefix} (e.g. "mst"), its value and what is allowed; unknown fields list the
   * allowed ones.
   */
  static MstConfig fromTree(JsonNode node, String what, String source, String pathPrefix) {
    String field = pathPrefix == null || pathPrefix.isEmpty() ? "<root>" : pathPrefix;
    if (node == null || !node.isObject()) {
      throw new IllegalArgumentException(
          what
              + " "
              + source
              + ": field '"
              + field
              + "' holds "
              + (node == null
                  ? "nothing"
                  : "a " + node.getNodeType().toString().toLowerCase(Locale.ROOT))
              + "; allowed: a mapping with fields "
              + knownFields());
    }
    MstConfig c = StrictConfigReader.bind(JSON, node, MstConfig.class, source, what, pathPrefix);
    try {
      return c.validate();
    } catch (IllegalArgumentException e) {
      String in = pathPrefix == null || pathPrefix.isEmpty() ? "" : "in '" + pathPrefix + "': ";
      throw new IllegalArgumentException(what + " " + source + ": " + in + e.getMessage(), e);
    }
  }

  /** The field names of an MST config, for error messages. */
  static Set<String> knownFields() {
    Set<String> names = new TreeSet<>();
    JSON.valueToTree(new MstConfig()).fieldNames().forEachRemaining(names::add);
    return names;
  }

  static String toJson(MstConfig c) {
    return text(() -> JSON.writeValueAsString(c));
  }

  static String toYaml(MstConfig c) {
    return text(() -> YAML.writeValueAsString(c));
  }

  /**
   * The text {@code writing} produces (MST configs, states and update records); a Jackson failure
   * as IllegalStateException.
   */
  static String text(JsonText.Writing writing) {
    try {
      return writing.write();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private MstConfigIO() {}
}
