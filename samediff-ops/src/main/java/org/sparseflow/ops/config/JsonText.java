package org.sparseflow.ops.config;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Jackson's text output without its checked exception: the one place where the modules that write
 * JSON to a String (reports, traces, run files) turn Jackson's {@link IOException} into an {@link
 * UncheckedIOException}.
 */
public final class JsonText {

  /** A Jackson call that produces text, such as {@code mapper.writeValueAsString(value)}. */
  @FunctionalInterface
  public interface Writing {
    String write() throws IOException;
  }

  private JsonText() {}

  /** The text {@code writing} produces; an {@link IOException} is rethrown unchecked. */
  public static String of(Writing writing) {
    try {
      return writing.write();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
