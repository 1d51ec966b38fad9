package org.sparseflow.layers.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;
import org.nd4j.shade.jackson.core.JsonLocation;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.databind.DeserializationFeature;
import org.nd4j.shade.jackson.databind.JsonMappingException;
import org.nd4j.shade.jackson.databind.MapperFeature;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.nd4j.shade.jackson.databind.exc.InvalidFormatException;
import org.nd4j.shade.jackson.databind.exc.MismatchedInputException;
import org.nd4j.shade.jackson.databind.exc.UnrecognizedPropertyException;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLFactory;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JSON / YAML reading and writing of {@link SparsityConfig} with ND4J's shaded Jackson. The mappers
 * use no default typing and the config has no polymorphic fields, so a document can never make the
 * parser instantiate a class it names; unknown fields are errors (typos do not pass silently).
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

  private static ObjectMapper configure(ObjectMapper m) {
    m.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, true);
    m.configure(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, true);
    m.configure(DeserializationFeature.ACCEPT_FLOAT_AS_INT, false);
    m.configure(MapperFeature.ACCEPT_CASE_INSENSITIVE_ENUMS, true);
    m.configure(SerializationFeature.INDENT_OUTPUT, true);
    return m;
  }

  static String toJson(SparsityConfig c) {
    try {
      return JSON.writeValueAsString(c);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(
          "Cannot write sparsity config as JSON: " + e.getOriginalMessage(), e);
    }
  }

  static String toYaml(SparsityConfig c) {
    try {
      return YAML.writeValueAsString(c);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(
          "Cannot write sparsity config as YAML: " + e.getOriginalMessage(), e);
    }
  }

  static SparsityConfig parse(String text, String source, boolean yaml) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException(
          "Sparsity config "
              + source
              + " is empty; allowed: a JSON or YAML mapping with fields "
              + knownFields());
    }
    SparsityConfig c;
    try {
      c = (yaml ? YAML : JSON).readValue(text, SparsityConfig.class);
    } catch (JsonProcessingException e) {
      throw describe(e, source, yaml);
    }
    if (c == null) {
      throw new IllegalArgumentException(
          "Sparsity config " + source + " holds no mapping; allowed: fields " + knownFields());
    }
    return c.validate(source);
  }

  static SparsityConfig load(Path file) {
    if (file == null) {
      throw new IllegalArgumentException(
          "file = null; allowed: a path to a JSON or YAML sparsity config");
    }
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "Sparsity config file "
              + file.toAbsolutePath()
              + " does not exist or is not a regular file");
    }
    try {
      String text = Files.readString(file, StandardCharsets.UTF_8);
      return parse(text, file.toString(), !isJsonName(file.toString()));
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Cannot read sparsity config " + file + ": " + e.getMessage(), e);
    }
  }

  static SparsityConfig load(InputStream in, String sourceName) {
    if (in == null) {
      throw new IllegalArgumentException(
          "in = null; allowed: a stream of a JSON or YAML sparsity config");
    }
    String src = sourceName == null ? "<stream>" : sourceName;
    try {
      String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return parse(text, src, !isJsonName(src));
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
    return name.toLowerCase(java.util.Locale.ROOT).endsWith(".json");
  }

  private static String knownFields() {
    return "[pattern, sparsity, distribution, initialMask, seed, include, exclude, keepFirstDense,"
        + " keepLastDense, attention, mst]";
  }

  /**
   * Turns a Jackson failure into an error naming source, line/column, field, value and what is
   * allowed.
   */
  private static IllegalArgumentException describe(
      JsonProcessingException e, String source, boolean yaml) {
    JsonLocation loc = e.getLocation();
    String where =
        loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
    String field = null;
    if (e instanceof JsonMappingException jm && !jm.getPath().isEmpty()) {
      field =
          jm.getPath().stream()
              .map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
              .collect(Collectors.joining("."))
              .replace(".[", "[");
    }
    String msg;
    if (e instanceof UnrecognizedPropertyException u) {
      msg =
          "unknown field '"
              + u.getPropertyName()
              + "'"
              + (field == null ? "" : " (path " + field + ")")
              + "; allowed fields: "
              + u.getKnownPropertyIds();
    } else if (e instanceof InvalidFormatException f) {
      Class<?> t = f.getTargetType();
      String allowed =
          t != null && t.isEnum()
              ? "one of " + Arrays.toString(t.getEnumConstants())
              : "a value of type " + (t == null ? "?" : t.getSimpleName());
      msg = "field '" + field + "' has value '" + f.getValue() + "'; allowed: " + allowed;
    } else if (e instanceof MismatchedInputException m) {
      Class<?> t = m.getTargetType();
      msg =
          "field '"
              + (field == null ? "<root>" : field)
              + "' has the wrong kind of value; allowed: "
              + (t == null ? "see the documented schema" : describeType(t))
              + " ("
              + e.getOriginalMessage()
              + ")";
    } else {
      msg = "malformed " + (yaml ? "YAML" : "JSON") + ": " + e.getOriginalMessage();
    }
    return new IllegalArgumentException("Sparsity config " + source + where + ": " + msg, e);
  }

  private static String describeType(Class<?> t) {
    if (t == SparsityConfig.class) {
      return "a mapping with fields " + knownFields();
    }
    if (t == AttentionSettings.class) {
      return "a mapping with fields [pattern, blockSize, layers, replaceSelfAttention]";
    }
    if (t.isEnum()) {
      return "one of " + Arrays.toString(t.getEnumConstants());
    }
    if (java.util.List.class.isAssignableFrom(t)) {
      return "a list";
    }
    return "a value of type " + t.getSimpleName();
  }
}
