package org.sparseflow.cli;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** stdout without SameDiff's "Added differentiated op" lines (printed with System.out in M2.1). */
final class QuietStdout extends PrintStream {

  private static final String NOISE = "Added differentiated op ";

  QuietStdout(PrintStream target) {
    super(new LineFilter(target), true, StandardCharsets.UTF_8);
  }

  private static final class LineFilter extends OutputStream {
    private final PrintStream target;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    LineFilter(PrintStream target) {
      this.target = target;
    }

    @Override
    public synchronized void write(int b) {
      line.write(b);
      if (b == '\n') {
        emit();
      }
    }

    @Override
    public synchronized void flush() {
      // only complete lines are judged; a partial line (a prompt, a progress bar) is passed on at
      // flush
      if (line.size() > 0
          && !line.toString(StandardCharsets.UTF_8)
              .startsWith(NOISE.substring(0, Math.min(NOISE.length(), line.size())))) {
        emit();
      }
      target.flush();
    }

    private void emit() {
      String s = line.toString(StandardCharsets.UTF_8);
      line.reset();
      if (!s.startsWith(NOISE)) {
        target.print(s);
      }
    }
  }
}
