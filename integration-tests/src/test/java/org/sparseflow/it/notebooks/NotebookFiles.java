package org.sparseflow.it.notebooks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/** Reading notebooks: their location, code cells, cell sources and source hashes. */
public final class NotebookFiles {
  /** Metadata key (cell and notebook) under which the runner records what it executed. */
  public static final String META = "sparseflow";

  private NotebookFiles() {}

  /** examples/notebooks, from the repository root or a module directory. */
  public static Path notebookDir() {
    for (Path p : new Path[] {Path.of("../examples/notebooks"), Path.of("examples/notebooks")}) {
      if (Files.isDirectory(p)) {
        return p;
      }
    }
    throw new IllegalStateException(
        "examples/notebooks not found from " + Path.of("").toAbsolutePath());
  }

  /** Every .ipynb of the notebook directory, sorted. */
  public static List<Path> notebooks() throws IOException {
    try (Stream<Path> s = Files.list(notebookDir())) {
      return s.filter(p -> p.toString().endsWith(".ipynb")).sorted().collect(Collectors.toList());
    }
  }

  public static ObjectNode read(Path notebook) throws IOException {
    return (ObjectNode) new ObjectMapper().readTree(Files.readAllBytes(notebook));
  }

  /** The code cells of a notebook, in order. */
  public static List<ObjectNode> codeCells(JsonNode root) {
    List<ObjectNode> cells = new ArrayList<>();
    for (JsonNode cell : root.path("cells")) {
      if ("code".equals(cell.path("cell_type").asText())) {
        cells.add((ObjectNode) cell);
      }
    }
    return cells;
  }

  /** A cell's source as one string (Jupyter stores it as an array of lines or one string). */
  public static String source(JsonNode cell) {
    JsonNode src = cell.path("source");
    if (!src.isArray()) {
      return src.asText();
    }
    StringBuilder sb = new StringBuilder();
    src.forEach(l -> sb.append(l.asText()));
    return sb.toString();
  }

  /** The source without kernel magic lines (those starting with {@code %}). */
  public static String code(JsonNode cell) {
    return source(cell)
        .lines()
        .filter(l -> !l.stripLeading().startsWith("%"))
        .collect(Collectors.joining("\n"));
  }

  /** SHA-256 (hex) of a text in UTF-8. */
  public static String sha256(String text) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(md.digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Hash of every code cell's source in order: what the notebook-level hash records. */
  public static String sourcesHash(JsonNode root) {
    StringBuilder sb = new StringBuilder();
    for (ObjectNode c : codeCells(root)) {
      sb.append(sha256(source(c))).append('\n');
    }
    return sha256(sb.toString());
  }
}
