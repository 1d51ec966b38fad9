package org.sparseflow.train;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Training progress on stderr: a redrawn bar with ETA, loss, sparsity and FLOPs on a terminal;
 * plain lines (about 20 per run, plus evaluations) when the stream is not a terminal, so logs and
 * CI stay readable.
 */
public final class ProgressBar {

  private static final int WIDTH = 24;

  private final PrintStream out;
  private final boolean interactive;
  private final long total;
  private final long plainEvery;
  private final String label;
  private long lastDraw;
  private int lastLength;

  public ProgressBar(PrintStream out, boolean interactive, long total, String label) {
    this.out = out;
    this.interactive = interactive;
    this.total = total;
    this.label = label;
    this.plainEvery = Math.max(1, total / 20);
  }

  /** Interactive when a console is attached and output is not redirected. */
  public static boolean stderrIsTerminal() {
    return System.console() != null
        && System.getenv("TERM") != null
        && !"dumb".equals(System.getenv("TERM"));
  }

  /**
   * @param step steps done (1-based)
   * @param startStep step the session started from (for the ETA of resumed runs)
   * @param sessionSecs seconds spent in this session
   */
  public void update(
      long step,
      long startStep,
      double sessionSecs,
      double loss,
      Double valLoss,
      double density,
      double flops) {
    String line = render(step, startStep, sessionSecs, loss, valLoss, density, flops);
    if (interactive) {
      long now = System.nanoTime();
      if (step != total && now - lastDraw < 100_000_000L) {
        return; // at most 10 redraws a second
      }
      lastDraw = now;
      String pad = line.length() < lastLength ? " ".repeat(lastLength - line.length()) : "";
      out.print("\r" + line + pad);
      lastLength = line.length();
      if (step == total) {
        out.println();
      }
      out.flush();
    } else if (step % plainEvery == 0 || step == total || valLoss != null) {
      out.println(line);
      out.flush();
    }
  }

  /** Ends the bar's line (interactive) before other output. */
  public void finish() {
    if (interactive && lastLength > 0) {
      out.println();
      out.flush();
      lastLength = 0;
    }
  }

  String render(
      long step,
      long startStep,
      double sessionSecs,
      double loss,
      Double valLoss,
      double density,
      double flops) {
    double frac = total == 0 ? 1 : (double) step / total;
    int filled = (int) Math.round(frac * WIDTH);
    long done = step - startStep;
    String eta = done > 0 ? duration(sessionSecs / done * (total - step)) : "--:--";
    StringBuilder sb = new StringBuilder();
    if (label != null && !label.isEmpty()) {
      sb.append(label).append(' ');
    }
    sb.append('[').append("#".repeat(filled)).append(".".repeat(WIDTH - filled)).append("] ");
    sb.append(
        String.format(
            Locale.ROOT, "%d/%d %3.0f%% ETA %s loss %.4f", step, total, frac * 100, eta, loss));
    if (valLoss != null) {
      sb.append(String.format(Locale.ROOT, " val %.4f", valLoss));
    }
    sb.append(
        String.format(Locale.ROOT, " sparsity %.1f%% FLOPs %s", (1 - density) * 100, si(flops)));
    return sb.toString();
  }

  public static String duration(double seconds) {
    long s = Math.max(0, Math.round(seconds));
    return s >= 3600
        ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
        : String.format(Locale.ROOT, "%02d:%02d", s / 60, s % 60);
  }

  /** 1.23e15 -> "1.23P". */
  public static String si(double v) {
    String[] units = {"", "K", "M", "G", "T", "P", "E"};
    int i = 0;
    double x = v;
    while (Math.abs(x) >= 1000 && i < units.length - 1) {
      x /= 1000;
      i++;
    }
    return String.format(Locale.ROOT, i == 0 ? "%.0f%s" : "%.2f%s", x, units[i]);
  }
}
