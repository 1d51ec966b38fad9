package org.sparseflow.it.notebooks;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.nd4j.shade.jackson.core.util.DefaultIndenter;
import org.nd4j.shade.jackson.core.util.DefaultPrettyPrinter;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ArrayNode;
import org.nd4j.shade.jackson.databind.node.JsonNodeFactory;
import org.nd4j.shade.jackson.databind.node.ObjectNode;
import org.sparseflow.it.notebooks.NotebookExecution.CellOutput;

/**
 * Executes notebooks and writes their outputs into the .ipynb files: printed text as {@code stream}
 * outputs, displayed images as {@code display_data} with {@code image/png}, an execution count per
 * code cell, and the SHA-256 of each cell's source in the cell metadata ({@code
 * sparseflow.source_sha256}) and of all sources in the notebook metadata, which {@code
 * NotebookOutputsTest} compares to fail on stale outputs.
 *
 * <p>It lives in the integration-tests module's test scope because that class path holds every
 * module the notebooks import (examples, trainer, dataflow backend, JFreeChart) and it is never
 * published. Run from the repository root:
 *
 * <pre>
 * ./mvnw -o -B -q install -DskipTests -pl integration-tests -am
 * ./mvnw -o -B -q -pl integration-tests dependency:build-classpath \
 *     -Dmdep.includeScope=test -Dmdep.outputFile=target/notebooks.cp
 * cd integration-tests &amp;&amp; java --add-modules jdk.incubator.vector \
 *     -cp target/test-classes:$(cat target/notebooks.cp) \
 *     org.sparseflow.it.notebooks.NotebookRunner [notebook.ipynb ...]
 * </pre>
 *
 * Without arguments every notebook in examples/notebooks is run. Library chatter is kept out of the
 * outputs: logging runs at WARN (slf4j-simple's {@code defaultLogLevel}, unless set on the command
 * line), so warnings still show, and the "Added differentiated op ..." lines SameDiff M2.1 prints
 * to stdout for every op when it builds gradients are dropped.
 */
public final class NotebookRunner {
  private NotebookRunner() {}

  /** Prefix of SameDiff M2.1's per-op stdout line when it builds a gradient function. */
  static final String SAMEDIFF_CHATTER = "Added differentiated op ";

  public static void main(String[] args) throws Exception {
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    List<Path> books = new ArrayList<>();
    for (String a : args) {
      books.add(Path.of(a));
    }
    if (books.isEmpty()) {
      books.addAll(NotebookFiles.notebooks());
    }
    for (Path p : books) {
      if (!Files.isRegularFile(p) || !p.toString().endsWith(".ipynb")) {
        throw new IllegalArgumentException(
            "notebook = '" + p + "' is not an existing .ipynb file; allowed: notebook paths");
      }
    }
    for (Path p : books) {
      long t0 = System.nanoTime();
      List<CellOutput> outputs = NotebookExecution.run(p);
      write(p, outputs);
      System.out.printf(
          "%s: %d code cells executed and written in %.1f s%n",
          p.getFileName(), outputs.size(), (System.nanoTime() - t0) / 1e9);
    }
  }

  /** Writes the outputs and hashes into the notebook file. */
  static void write(Path notebook, List<CellOutput> outputs) throws Exception {
    ObjectNode root = NotebookFiles.read(notebook);
    List<ObjectNode> cells = NotebookFiles.codeCells(root);
    if (cells.size() != outputs.size()) {
      throw new IllegalStateException(
          notebook
              + " changed while it ran: "
              + cells.size()
              + " code cells, "
              + outputs.size()
              + " outputs");
    }
    JsonNodeFactory f = JsonNodeFactory.instance;
    for (int i = 0; i < cells.size(); i++) {
      ObjectNode cell = cells.get(i);
      cell.set("outputs", outputs(f, outputs.get(i).printed()));
      cell.put("execution_count", i + 1);
      ObjectNode meta = cell.has("metadata") ? (ObjectNode) cell.get("metadata") : f.objectNode();
      meta.set(
          NotebookFiles.META,
          f.objectNode().put("source_sha256", NotebookFiles.sha256(NotebookFiles.source(cell))));
      cell.set("metadata", meta);
    }
    ObjectNode meta = (ObjectNode) root.get("metadata");
    meta.set(
        NotebookFiles.META,
        f.objectNode()
            .put("sources_sha256", NotebookFiles.sourcesHash(root))
            .put("executed_by", NotebookRunner.class.getName()));
    DefaultPrettyPrinter pp =
        new DefaultPrettyPrinter().withObjectIndenter(new DefaultIndenter(" ", "\n"));
    pp.indentArraysWith(new DefaultIndenter(" ", "\n"));
    String json = new ObjectMapper().writer(pp).writeValueAsString(root) + "\n";
    Files.writeString(notebook, json, StandardCharsets.UTF_8);
  }

  /** Printed text split into stream outputs and image displays, in order. */
  static ArrayNode outputs(JsonNodeFactory f, String printed) {
    ArrayNode out = f.arrayNode();
    List<String> text = new ArrayList<>();
    for (String line : printed.split("\n", -1)) {
      if (line.startsWith(SAMEDIFF_CHATTER)) {
        continue;
      }
      if (line.startsWith(NotebookExecution.IMAGE_MARK)) {
        flush(f, out, text);
        ObjectNode data = f.objectNode();
        data.put("image/png", line.substring(NotebookExecution.IMAGE_MARK.length()).strip());
        data.put("text/plain", "<image>");
        out.add(
            f.objectNode()
                .put("output_type", "display_data")
                .<ObjectNode>set("data", data)
                .set("metadata", f.objectNode()));
      } else {
        text.add(line);
      }
    }
    // split("\n", -1) leaves one empty string after a final newline
    if (!text.isEmpty() && text.get(text.size() - 1).isEmpty()) {
      text.remove(text.size() - 1);
    }
    flush(f, out, text);
    return out;
  }

  private static void flush(JsonNodeFactory f, ArrayNode out, List<String> text) {
    if (text.isEmpty()) {
      return;
    }
    ArrayNode lines = f.arrayNode();
    for (int i = 0; i < text.size(); i++) {
      lines.add(text.get(i) + "\n");
    }
    out.add(f.objectNode().put("output_type", "stream").put("name", "stdout").set("text", lines));
    text.clear();
  }
}
