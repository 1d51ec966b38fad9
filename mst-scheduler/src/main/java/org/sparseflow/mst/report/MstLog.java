package org.sparseflow.mst.report;

import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.sparseflow.mst.core.UpdateRecord;

/**
 * JSONL log of topology updates: one {@link UpdateRecord} per line (step, phase, target and actual
 * global density, per-layer density, pruned/grown counts, attention patterns, cumulative and
 * dense-reference FLOPs, loss). Use as {@code mst.onUpdate(log)}; keeps the records in memory too,
 * for plotting.
 */
public final class MstLog implements Consumer<UpdateRecord>, Closeable {
  private final BufferedWriter out;
  private final List<UpdateRecord> records = new ArrayList<>();

  public MstLog(Path file) throws IOException {
    if (file.toAbsolutePath().getParent() != null) {
      Files.createDirectories(file.toAbsolutePath().getParent());
    }
    this.out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
  }

  @Override
  public synchronized void accept(UpdateRecord r) {
    records.add(r);
    try {
      out.write(r.toJsonLine());
      out.newLine();
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public synchronized List<UpdateRecord> records() {
    return new ArrayList<>(records);
  }

  public static List<UpdateRecord> read(Path file) throws IOException {
    List<UpdateRecord> out = new ArrayList<>();
    for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      if (!line.isBlank()) {
        out.add(UpdateRecord.fromJson(line));
      }
    }
    return out;
  }

  @Override
  public void close() throws IOException {
    out.close();
  }
}
