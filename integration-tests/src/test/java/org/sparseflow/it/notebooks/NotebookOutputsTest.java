package org.sparseflow.it.notebooks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * The committed notebooks carry outputs from a real run of their current sources: every code cell's
 * recorded source hash matches its source (else the outputs are stale: rerun {@link
 * NotebookRunner}), cells have outputs, and cells that display a chart have a PNG.
 */
class NotebookOutputsTest {
  private static final String RERUN =
      "; the committed outputs are stale: rerun org.sparseflow.it.notebooks.NotebookRunner"
          + " (see its javadoc) and commit the notebooks";

  @TestFactory
  Stream<DynamicTest> committedOutputsMatchTheCellSources() throws Exception {
    List<Path> books = NotebookFiles.notebooks();
    assertTrue(books.size() >= 3, "at least three notebooks, found " + books);
    return books.stream()
        .map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> check(p)));
  }

  static void check(Path p) throws Exception {
    ObjectNode root = NotebookFiles.read(p);
    String recorded =
        root.path("metadata").path(NotebookFiles.META).path("sources_sha256").asText();
    assertEquals(
        NotebookFiles.sourcesHash(root), recorded, p.getFileName() + ": notebook hash" + RERUN);
    int withOutput = 0;
    List<ObjectNode> cells = NotebookFiles.codeCells(root);
    for (int i = 0; i < cells.size(); i++) {
      ObjectNode c = cells.get(i);
      String where = p.getFileName() + " cell " + (i + 1);
      String hash = c.path("metadata").path(NotebookFiles.META).path("source_sha256").asText();
      assertEquals(NotebookFiles.sha256(NotebookFiles.source(c)), hash, where + RERUN);
      JsonNode outs = c.path("outputs");
      withOutput += outs.size() > 0 ? 1 : 0;
      if (NotebookFiles.code(c).contains("display(")) {
        boolean png = false;
        for (JsonNode o : outs) {
          png |= !o.path("data").path("image/png").asText().isEmpty();
        }
        assertTrue(png, where + " displays a chart but has no image/png output" + RERUN);
      }
    }
    assertTrue(withOutput > 0, p.getFileName() + " has no outputs" + RERUN);
  }

  @Test
  void staleSourcesAreDetected() throws Exception {
    Path p = NotebookFiles.notebooks().get(0);
    ObjectNode root = NotebookFiles.read(p);
    ObjectNode cell = NotebookFiles.codeCells(root).get(0);
    String before = NotebookFiles.sourcesHash(root);
    cell.put("source", NotebookFiles.source(cell) + "\n// edited");
    assertFalse(before.equals(NotebookFiles.sourcesHash(root)));
    assertFalse(
        NotebookFiles.sha256(NotebookFiles.source(cell))
            .equals(cell.path("metadata").path(NotebookFiles.META).path("source_sha256").asText()));
  }
}
