package org.sparseflow.layers.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.MapperFeature;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLFactory;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.ops.config.StrictConfigReader;
import org.sparseflow.ops.config.StrictConfigReader.Format;

/**
 * JSON / YAML reading and writing of {@link SparsityConfig} with ND4J's shaded Jackson. The mappers
 * use no default typing and the config has no polymorphic fields, so a document can never make the
 * parser instantiate a class it names; unknown fields are errors (typos do not pass silently).
 * Documents go through {@link StrictConfigReader} (duplicate keys, extra documents, anchors and
 * aliases, non-UTF-8 input and files over 1 MiB are rejected).
 */
final class SparsityConfigIO {
  private static final Logger log = LoggerFactory.getLogger(SparsityConfigIO.class);
  private static final ObjectMapper JSON = configure(new ObjectMapper());
  private static final ObjectMapper YAML =
      configure(
          new ObjectMapper(
              new YAMLFactory()
                  .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
                  .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)));

  private SparsityConfigIO() {}

  private static final String WHAT = "Sparsity config";

  // ObjectMapper.configure(MapperFeature, ...) is deprecated in favour of the mapper builders,
  // which
  // this shaded Jackson offers only for plain JSON; the YAML mapper needs the same setting.
  @SuppressWarnings("deprecation")
  private static ObjectMapper configure(ObjectMapper m) {
    StrictConfigReader.strict(m);
    m.configure(MapperFeature.ACCEPT_CASE_INSENSITIVE_ENUMS, true);
    m.configure(SerializationFeature.INDENT_OUTPUT, true);
    return m;
  }

  static String toJson(SparsityConfig c) {
    return write(JSON, c, "JSON");
  }

  static String toYaml(SparsityConfig c) {
    return write(YAML, c, "YAML");
  }

  /** {@code mapper}'s text of {@code c}; a failure names the {@code format}. */
  private static String write(ObjectMapper mapper, SparsityConfig c, String format) {
    try {
      return mapper.writeValueAsString(c);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(
          "Cannot write sparsity config as " + format + ": " + e.getOriginalMessage(), e);
    }
  }

  static SparsityConfig parse(String text, String source, boolean yaml) {
    return bind(
        StrictConfigReader.readText(text, source, yaml ? Format.YAML : Format.JSON, WHAT),
        source,
        yaml);
  }

  /** The one path from a checked document tree to a validated config. */
  private static SparsityConfig bind(JsonNode tree, String source, boolean yaml) {
    if (!tree.isObject()) {
      throw new IllegalArgumentException(
          WHAT
              + " "
              + source
              + " holds a "
              + tree.getNodeType().toString().toLowerCase(Locale.ROOT)
              + ", not a mapping; allowed: a "
              + (yaml ? "YAML" : "JSON")
              + " mapping with fields "
              + knownFields());
    }
    SparsityConfig c =
        StrictConfigReader.bind(yaml ? YAML : JSON, tree, SparsityConfig.class, source, WHAT, "");
    return c.validate(source);
  }

  static SparsityConfig load(Path file) {
    if (file == null) {
      throw new IllegalArgumentException(
          "file = null; allowed: a path to a JSON or YAML sparsity config");
    }
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          WHAT + " file " + file + " does not exist or is not a regular file");
    }
    return bind(
        StrictConfigReader.readFile(file, WHAT), file.toString(), !isJsonName(file.toString()));
  }

  static SparsityConfig load(InputStream in, String sourceName) {
    if (in == null) {
      throw new IllegalArgumentException(
          "in = null; allowed: a stream of a JSON or YAML sparsity config");
    }
    String src = sourceName == null ? "<stream>" : sourceName;
    try {
      byte[] bytes = in.readNBytes((int) StrictConfigReader.MAX_BYTES + 1);
      boolean yaml = !isJsonName(src);
      return bind(
          StrictConfigReader.readBytes(bytes, src, yaml ? Format.YAML : Format.JSON, WHAT),
          src,
          yaml);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot read sparsity config " + src + ": " + e.getMessage(), e);
    }
  }

  static Optional<SparsityConfig> resolve() {
    String prop = System.getProperty(SparsityConfig.SYSTEM_PROPERTY);
    if (prop != null && !prop.isBlank()) {
      log.info("Sparsity config from -D{}={}", SparsityConfig.SYSTEM_PROPERTY, prop);
      return Optional.of(load(Path.of(prop.trim())));
    }
    String env = System.getenv(SparsityConfig.ENV_VARIABLE);
    if (env != null && !env.isBlank()) {
      log.info("Sparsity config from ${}={}", SparsityConfig.ENV_VARIABLE, env);
      return Optional.of(load(Path.of(env.trim())));
    }
    ClassLoader cl = Thread.currentThread().getContextClassLoader();
    if (cl == null) {
      cl = SparsityConfig.class.getClassLoader();
    }
    var url = cl.getResource(SparsityConfig.CLASSPATH_RESOURCE);
    if (url != null) {
      log.info("Sparsity config from classpath resource {}", url);
      try (InputStream in = url.openStream()) {
        return Optional.of(load(in, url.toString()));
      } catch (IOException e) {
        throw new UncheckedIOException(
            "Cannot read sparsity config " + url + ": " + e.getMessage(), e);
      }
    }
    return Optional.empty();
  }

  private static boolean isJsonName(String name) {
    return name.toLowerCase(Locale.ROOT).endsWith(".json");
  }

  private static String knownFields() {
    return "[pattern, sparsity, distribution, initialMask, seed, include, exclude, keepFirstDense,"
        + " keepLastDense, attention, fuse, mst]";
  }
}
