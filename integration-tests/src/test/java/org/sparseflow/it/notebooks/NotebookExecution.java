package org.sparseflow.it.notebooks;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import jdk.jshell.DeclarationSnippet;
import jdk.jshell.JShell;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * Runs the code cells of a notebook, in order, in JShell (local execution engine, this JVM's class
 * path) and returns what each cell printed. Kernel magics (lines starting with {@code %}) are
 * skipped. IJava's {@code display(Object)} is defined so that an image ({@code
 * java.awt.image.BufferedImage}) is written as PNG, base64, on one line that starts with {@link
 * #IMAGE_MARK}, and any other object as its string. A compile error, unresolved reference or
 * exception throws {@link NotebookFailure}.
 */
public final class NotebookExecution {
  /** Start of a printed line that carries a displayed image (base64 PNG follows). */
  public static final String IMAGE_MARK = "\u0001sparseflow-image/png:";

  /** What one code cell printed (text with image lines, see {@link #IMAGE_MARK}). */
  public record CellOutput(int cell, String printed) {}

  /** A cell that failed to compile or threw. */
  public static final class NotebookFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotebookFailure(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static final String DISPLAY =
      "String display(Object o) {\n"
          + "  if (o instanceof java.awt.image.BufferedImage img) {\n"
          + "    try {\n"
          + "      java.io.ByteArrayOutputStream png = new java.io.ByteArrayOutputStream();\n"
          + "      javax.imageio.ImageIO.write(img, \"png\", png);\n"
          + "      System.out.println(\""
          + IMAGE_MARK.replace("\u0001", "\\u0001")
          + "\" + java.util.Base64.getEncoder().encodeToString(png.toByteArray()));\n"
          + "    } catch (java.io.IOException e) { throw new java.io.UncheckedIOException(e); }\n"
          + "  } else { System.out.println(o); }\n"
          + "  return String.valueOf(System.identityHashCode(o));\n"
          + "}";

  private NotebookExecution() {}

  /** Sends writes to whichever buffer is current (one per cell). */
  private static final class Switch extends OutputStream {
    private ByteArrayOutputStream target = new ByteArrayOutputStream();

    @Override
    public synchronized void write(int b) {
      target.write(b);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      target.write(b, off, len);
    }

    synchronized String take() {
      String s = target.toString(StandardCharsets.UTF_8);
      target = new ByteArrayOutputStream();
      return s;
    }
  }

  /** Runs every code cell of {@code notebook}; returns one output per code cell. */
  public static List<CellOutput> run(Path notebook) throws Exception {
    List<ObjectNode> cells = NotebookFiles.codeCells(NotebookFiles.read(notebook));
    if (cells.isEmpty()) {
      throw new NotebookFailure(notebook + " has no code cells", null);
    }
    String classPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Switch sink = new Switch();
    PrintStream capture = new PrintStream(sink, true, StandardCharsets.UTF_8);
    PrintStream out = System.out, err = System.err;
    List<CellOutput> outputs = new ArrayList<>();
    try (JShell js =
        JShell.builder()
            .executionEngine("local")
            .out(capture)
            .err(capture)
            .compilerOptions("-classpath", classPath)
            .build()) {
      for (String entry : classPath.split(File.pathSeparator)) {
        if (!entry.isBlank()) {
          js.addToClasspath(entry);
        }
      }
      System.setOut(capture);
      System.setErr(capture);
      eval(js, notebook, -1, DISPLAY);
      sink.take();
      for (int i = 0; i < cells.size(); i++) {
        eval(js, notebook, i, NotebookFiles.code(cells.get(i)));
        capture.flush();
        outputs.add(new CellOutput(i, sink.take()));
      }
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
    return outputs;
  }

  /** Splits a cell into complete snippets and evaluates each, throwing on any problem. */
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
          throw new NotebookFailure(
              where + "exception " + e.exception() + "\n" + snippet, e.exception());
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
          throw new NotebookFailure(
              where + e.status() + " " + diags + " unresolved=" + unresolved + "\n" + snippet,
              null);
        }
      }
    }
  }
}
