package org.sparseflow.train;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.nd4j.shade.jackson.databind.DeserializationFeature;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.SerializationFeature;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.ops.config.JsonText;

/** The JSON mapper used for run files (ND4J's shaded Jackson, so no extra dependency). */
public final class Json {

  public static final ObjectMapper MAPPER =
      new ObjectMapper()
          .enable(SerializationFeature.INDENT_OUTPUT)
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
  private static final ObjectMapper COMPACT = new ObjectMapper();

  private Json() {}

  public static String pretty(Object o) {
    return JsonText.of(() -> MAPPER.writeValueAsString(o));
  }

  public static String line(Object o) {
    return JsonText.of(() -> COMPACT.writeValueAsString(o));
  }

  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }

  public static JsonNode read(Path file) throws IOException {
    return MAPPER.readTree(Files.readAllBytes(file));
  }

  public static <T> T read(Path file, Class<T> type) throws IOException {
    return MAPPER.readValue(Files.readAllBytes(file), type);
  }

  public static <T> T convert(Object o, Class<T> type) {
    return MAPPER.convertValue(o, type);
  }
}
