package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.sparseflow.it.notebooks.NotebookExecution;
import org.sparseflow.it.notebooks.NotebookFiles;

/**
 * Runs every code cell of every notebook in examples/notebooks, in order, in JShell with this
 * module's test classpath ({@link NotebookExecution}), so the notebooks cannot rot. Kernel magics
 * (lines starting with {@code %}) are skipped; IJava's {@code display(Object)} is provided. Any
 * compile error, unresolved reference or exception fails. That the committed outputs belong to the
 * current sources is {@code NotebookOutputsTest}'s job.
 */
class NotebooksTest {

  @TestFactory
  Stream<DynamicTest> everyNotebookRuns() throws Exception {
    List<Path> books = NotebookFiles.notebooks();
    assertTrue(books.size() >= 3, "at least three notebooks, found " + books);
    return books.stream()
        .map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> run(p)));
  }

  static void run(Path notebook) throws Exception {
    assertTrue(!NotebookExecution.run(notebook).isEmpty(), notebook + " ran no cells");
  }
}
