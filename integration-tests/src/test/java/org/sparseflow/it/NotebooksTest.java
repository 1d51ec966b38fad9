package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import jdk.jshell.DeclarationSnippet;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * Runs every code cell of every notebook in examples/notebooks, in order, in JShell with this
 * module's test classpath, so the notebooks cannot rot. Kernel magics (lines starting with {@code
 * %}) are skipped; IJava's {@code display(Object)} is provided as a stub. Any compile error,
 * unresolved reference or exception fails.
 */
class NotebooksTest {

  static Path notebookDir() {
    for (Path p : new Path[] {Path.of("../examples/notebooks"), Path.of("examples/notebooks")}) {
      if (Files.isDirectory(p)) {
        return p;
      }
    }
    throw new IllegalStateException(
        "examples/notebooks not found from " + Path.of("").toAbsolutePath());
  }

  @TestFactory
  Stream<DynamicTest> everyNotebookRuns() throws Exception {
    List<Path> books;
    try (Stream<Path> s = Files.list(notebookDir())) {
      books = s.filter(p -> p.toString().endsWith(".ipynb")).sorted().collect(Collectors.toList());
    }
    assertTrue(books.size() >= 3, "at least three notebooks, found " + books);
    return books.stream()
        .map(p -> DynamicTest.dynamicTest(p.getFileName().toString(), () -> run(p)));
  }

  /** Code cells of a notebook, magic lines removed. */
  static List<String> codeCells(Path notebook) throws Exception {
    JsonNode root = new ObjectMapper().readTree(Files.readAllBytes(notebook));
    List<String> cells = new ArrayList<>();
    for (JsonNode cell : root.path("cells")) {
      if (!"code".equals(cell.path("cell_type").asText())) {
        continue;
      }
      JsonNode src = cell.path("source");
      String text;
      if (src.isArray()) {
        StringBuilder sb = new StringBuilder();
        src.forEach(l -> sb.append(l.asText()));
        text = sb.toString();
      } else {
        text = src.asText();
      }
      String code =
          text.lines()
              .filter(l -> !l.stripLeading().startsWith("%"))
              .collect(Collectors.joining("\n"));
      cells.add(code);
    }
    return cells;
  }

  static void run(Path notebook) throws Exception {
    List<String> cells = codeCells(notebook);
    assertFalse(cells.isEmpty(), notebook + " has no code cells");
    ByteArrayOutputStream console = new ByteArrayOutputStream();
    String classPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    try (JShell js =
        JShell.builder()
            .executionEngine("local")
            .out(new PrintStream(console, true))
            .err(new PrintStream(console, true))
            .compilerOptions("-classpath", classPath)
            .build()) {
      for (String entry : classPath.split(File.pathSeparator)) {
        if (!entry.isBlank()) {
          js.addToClasspath(entry);
        }
      }
      eval(
          js,
          notebook,
          -1,
          "String display(Object o) { return String.valueOf(System.identityHashCode(o)); }");
      for (int i = 0; i < cells.size(); i++) {
        eval(js, notebook, i, cells.get(i));
      }
    }
  }

  /** Splits a cell into complete snippets and evaluates each, failing on any problem. */
  static void eval(JShell js, Path notebook, int cell, String source) {
    SourceCodeAnalysis analysis = js.sourceCodeAnalysis();
    String remaining = source;
    while (!remaining.isBlank()) {
      SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(remaining);
      String snippet = info.source();
      if (snippet == null
          || info.completeness() == SourceCodeAnalysis.Completeness.DEFINITELY_INCOMPLETE
          || info.completeness() == SourceCodeAnalysis.Completeness.CONSIDERED_INCOMPLETE) {
        snippet = remaining; // let eval report it
        remaining = "";
      } else {
        remaining = info.remaining();
      }
      for (SnippetEvent e : js.eval(snippet)) {
        String where = notebook.getFileName() + " cell " + (cell + 1) + ": ";
        if (e.exception() != null) {
          fail(where + "exception " + e.exception() + "\n" + snippet, e.exception());
        }
        if (e.status() == Snippet.Status.REJECTED
            || e.status() == Snippet.Status.RECOVERABLE_NOT_DEFINED
            || e.status() == Snippet.Status.RECOVERABLE_DEFINED) {
          String diags =
              js.diagnostics(e.snippet())
                  .map(d -> d.getMessage(Locale.ROOT).replaceAll("\\s+", " "))
                  .collect(Collectors.joining("; "));
          List<String> unresolved =
              e.snippet() instanceof DeclarationSnippet d
                  ? js.unresolvedDependencies(d).collect(Collectors.toList())
                  : List.of();
          fail(where + e.status() + " " + diags + " unresolved=" + unresolved + "\n" + snippet);
        }
      }
    }
  }
}
