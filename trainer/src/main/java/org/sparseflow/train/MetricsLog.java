package org.sparseflow.train;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * {@code metrics.jsonl}: one JSON object per line ({@code step}, {@code loss}, {@code val_loss}
 * when evaluated, {@code density}, {@code flops} cumulative, {@code elapsed_s}, ...). On resume,
 * lines after the checkpoint's step are dropped (atomically) so the file matches an uninterrupted
 * run.
 */
public final class MetricsLog implements AutoCloseable {

  private final Path file;
  private BufferedWriter out;

  public MetricsLog(Path file) {
    this.file = file;
  }

  /** Opens for appending after keeping only records with {@code step <= keepUpToStep}. */
  public void open(long keepUpToStep) throws IOException {
    if (Files.exists(file)) {
      List<String> kept = new ArrayList<>();
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        if (line.isBlank()) {
          continue;
        }
        try {
          JsonNode n = Json.MAPPER.readTree(line);
          if (n.path("step").asLong(Long.MAX_VALUE) <= keepUpToStep) {
            kept.add(line);
          }
        } catch (IOException partialLine) {
          // a line cut by a crash: drop it
        }
      }
      AtomicFiles.writeString(file, kept.isEmpty() ? "" : String.join("\n", kept) + "\n");
    }
    out =
        Files.newBufferedWriter(
            file, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  public void append(Map<String, Object> record) throws IOException {
    out.write(Json.line(record));
    out.write('\n');
    out.flush();
  }

  public static List<JsonNode> read(Path file) throws IOException {
    List<JsonNode> rows = new ArrayList<>();
    if (!Files.exists(file)) {
      return rows;
    }
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        rows.add(Json.MAPPER.readTree(line));
      }
    }
    return rows;
  }

  @Override
  public void close() throws IOException {
    if (out != null) {
      out.close();
      out = null;
    }
  }
}
