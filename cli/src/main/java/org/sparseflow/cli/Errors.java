package org.sparseflow.cli;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.concurrent.ExecutionException;

/** Turns exceptions into the one-line messages the command line prints. */
final class Errors {

  private Errors() {}

  static String describe(Throwable ex) {
    Throwable t = ex;
    // unwrap reflection/execution wrappers to the exception that carries the user-facing message
    while ((t instanceof InvocationTargetException
            || t instanceof ExecutionException
            || t.getClass() == RuntimeException.class)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof NoSuchFileException e) {
      return "file " + e.getFile() + " does not exist";
    }
    if (t instanceof AccessDeniedException e) {
      return "permission denied: " + e.getFile();
    }
    if (t instanceof FileNotFoundException) {
      return "file not found: " + t.getMessage();
    }
    if (t instanceof OutOfMemoryError) {
      return "out of memory ("
          + t.getMessage()
          + "); use a smaller --batch-size or --context-length, or raise -Xmx";
    }
    String msg = t.getMessage();
    if (msg == null || msg.isBlank()) {
      msg = t.getClass().getSimpleName();
    }
    // keep it to one line
    int nl = msg.indexOf('\n');
    if (nl >= 0) {
      msg = msg.substring(0, nl).trim();
    }
    boolean userError =
        t instanceof IllegalArgumentException
            || t instanceof IllegalStateException
            || t instanceof IOException
            || t instanceof UncheckedIOException;
    return userError ? msg : t.getClass().getSimpleName() + ": " + msg;
  }
}
