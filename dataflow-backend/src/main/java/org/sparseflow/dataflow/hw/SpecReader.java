package org.sparseflow.dataflow.hw;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * Strict reader for hardware JSON files. Every number is written as {"value": x, "source": "..."};
 * a missing source, an unknown field or a value out of range is an {@link IllegalArgumentException}
 * naming the file, the field, the value and what is allowed.
 */
final class SpecReader {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private final String origin;
  private final JsonNode root;
  private final Map<String, String> sources = new LinkedHashMap<>();

  private SpecReader(String origin, JsonNode root) {
    this.origin = origin;
    this.root = root;
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(origin + ": hardware file must be a JSON object");
    }
  }

  static SpecReader ofResource(String resource) {
    try (InputStream in = SpecReader.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalArgumentException(
            "hardware resource '" + resource + "' not found in the jar");
      }
      return new SpecReader(resource, MAPPER.readTree(in));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "hardware resource '" + resource + "' is not valid JSON: " + e.getMessage(), e);
    }
  }

  static SpecReader ofFile(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "hardware file '" + file + "' does not exist or is not a file");
    }
    try {
      return new SpecReader(file.toString(), MAPPER.readTree(file.toFile()));
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "hardware file '" + file + "' is not valid JSON: " + e.getMessage(), e);
    }
  }

  static SpecReader ofString(String origin, String json) {
    try {
      return new SpecReader(origin, MAPPER.readTree(json));
    } catch (IOException e) {
      throw new IllegalArgumentException(origin + ": not valid JSON: " + e.getMessage(), e);
    }
  }

  String origin() {
    return origin;
  }

  Map<String, String> sources() {
    return sources;
  }

  void rejectUnknown(Set<String> allowed) {
    Iterator<String> it = root.fieldNames();
    while (it.hasNext()) {
      String f = it.next();
      if (!allowed.contains(f)) {
        throw new IllegalArgumentException(
            origin + ": unknown field '" + f + "'; allowed fields: " + allowed);
      }
    }
  }

  String text(String field, boolean required) {
    JsonNode n = root.get(field);
    if (n == null || n.isNull()) {
      if (required) {
        throw new IllegalArgumentException(origin + ": missing required field '" + field + "'");
      }
      return null;
    }
    if (!n.isTextual()) {
      throw new IllegalArgumentException(
          origin + ": field '" + field + "' must be a string, got " + n);
    }
    return n.asText();
  }

  /** Required sourced number within [min, max]. */
  double number(String field, double min, double max) {
    Double v = optionalNumber(field, min, max);
    if (v == null) {
      throw new IllegalArgumentException(
          origin + ": missing required field '" + field + "' ({\"value\": ..., \"source\": ...})");
    }
    return v;
  }

  Double optionalNumber(String field, double min, double max) {
    return sourcedNumber(root, field, field, min, max);
  }

  /** Sourced number nested in an object field, e.g. sparseEfficiency.unstructured. */
  Double nestedNumber(
      String objectField,
      String key,
      double min,
      double max,
      boolean required,
      Set<String> allowedKeys) {
    JsonNode obj = root.get(objectField);
    if (obj == null || obj.isNull()) {
      if (required) {
        throw new IllegalArgumentException(
            origin + ": missing required field '" + objectField + "'");
      }
      return null;
    }
    if (!obj.isObject()) {
      throw new IllegalArgumentException(
          origin + ": field '" + objectField + "' must be an object with keys " + allowedKeys);
    }
    Iterator<String> it = obj.fieldNames();
    while (it.hasNext()) {
      String k = it.next();
      if (!allowedKeys.contains(k)) {
        throw new IllegalArgumentException(
            origin + ": unknown key '" + objectField + "." + k + "'; allowed: " + allowedKeys);
      }
    }
    Double v = sourcedNumber(obj, key, objectField + "." + key, min, max);
    if (v == null && required) {
      throw new IllegalArgumentException(
          origin + ": missing required field '" + objectField + "." + key + "'");
    }
    return v;
  }

  Boolean optionalBoolean(String field) {
    JsonNode v = sourcedValue(root, field, field);
    if (v == null) {
      return null;
    }
    if (!v.isBoolean()) {
      throw new IllegalArgumentException(
          origin + ": field '" + field + ".value' must be true or false, got " + v);
    }
    return v.asBoolean();
  }

  /** A sourced list of [x, y] points, e.g. an efficiency curve. */
  List<double[]> points(String field, boolean required) {
    JsonNode v = sourcedValue(root, field, field);
    if (v == null) {
      if (required) {
        throw new IllegalArgumentException(origin + ": missing required field '" + field + "'");
      }
      return null;
    }
    if (!v.isArray() || v.size() == 0) {
      throw new IllegalArgumentException(
          origin + ": field '" + field + ".value' must be a non-empty array of [x, y] pairs");
    }
    List<double[]> out = new ArrayList<>();
    for (JsonNode p : v) {
      if (!p.isArray() || p.size() != 2 || !p.get(0).isNumber() || !p.get(1).isNumber()) {
        throw new IllegalArgumentException(
            origin
                + ": field '"
                + field
                + "' has a point "
                + p
                + "; each point must be [x, y] numbers");
      }
      out.add(new double[] {p.get(0).asDouble(), p.get(1).asDouble()});
    }
    return out;
  }

  /**
   * The "value" of sourced field {@code key} of {@code parent} ({@code path} names it in errors),
   * or null when the field is absent or null.
   */
  private JsonNode sourcedValue(JsonNode parent, String key, String path) {
    JsonNode n = parent.get(key);
    if (n == null || n.isNull()) {
      return null;
    }
    return requireSourced(n, path).get("value");
  }

  private Double sourcedNumber(JsonNode parent, String key, String path, double min, double max) {
    JsonNode v = sourcedValue(parent, key, path);
    if (v == null) {
      return null;
    }
    if (!v.isNumber()) {
      throw new IllegalArgumentException(
          origin + ": field '" + path + ".value' must be a number, got " + v);
    }
    double d = v.asDouble();
    if (!(d >= min && d <= max)) {
      throw new IllegalArgumentException(
          origin
              + ": field '"
              + path
              + "' = "
              + d
              + " is out of range; allowed ["
              + min
              + ", "
              + max
              + "]");
    }
    return d;
  }

  private JsonNode requireSourced(JsonNode n, String path) {
    if (!n.isObject() || !n.has("value")) {
      throw new IllegalArgumentException(
          origin
              + ": field '"
              + path
              + "' must be {\"value\": ..., \"source\": \"...\"}, got "
              + n);
    }
    JsonNode src = n.get("source");
    if (src == null || !src.isTextual() || src.asText().isBlank()) {
      throw new IllegalArgumentException(
          origin
              + ": field '"
              + path
              + "' has no source; every value needs a non-empty \"source\" (a public reference, or"
              + " \"ASSUMPTION: ...\")");
    }
    Iterator<String> it = n.fieldNames();
    while (it.hasNext()) {
      String f = it.next();
      if (!f.equals("value") && !f.equals("source")) {
        throw new IllegalArgumentException(
            origin + ": field '" + path + "' has unknown key '" + f + "'; allowed: value, source");
      }
    }
    sources.put(path, src.asText());
    return n;
  }
}
