package org.sparseflow.train;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

/**
 * A resumable checkpoint: one zip holding {@code state.json} (trainer state and full config),
 * {@code model.bin} (the model with its optimizer state) and optionally {@code sparsity.bin} (the
 * sparsity driver's state, e.g. MST masks schedule position and RNG). Written with {@link
 * AtomicFiles}, so a crash while saving leaves the previous checkpoint intact.
 */
public final class Checkpoint {

  public static final String FILE_NAME = "checkpoint.zip";

  /** Trainer state; public fields for Jackson. */
  public static final class State {
    public int formatVersion = 1;

    /** Steps completed. */
    public long step;

    public double elapsedSeconds;
    public double cumulativeFlops;
    public double lastLoss = Double.NaN;
    public Double lastValLoss;
    public String modelKind;
    public String vocabulary;
    public String corpusSha256;
    public TrainConfig config;
  }

  private final State state;
  private final byte[] model;
  private final byte[] sparsity;

  public Checkpoint(State state, byte[] model, byte[] sparsity) {
    this.state = state;
    this.model = model;
    this.sparsity = sparsity;
  }

  public State state() {
    return state;
  }

  public byte[] model() {
    return model;
  }

  public byte[] sparsity() {
    return sparsity;
  }

  public void writeTo(Path file) throws IOException {
    AtomicFiles.write(
        file,
        out -> {
          ZipOutputStream zip = new ZipOutputStream(out);
          put(
              zip,
              "state.json",
              Json.pretty(state).getBytes(java.nio.charset.StandardCharsets.UTF_8));
          put(zip, "model.bin", model);
          if (sparsity != null) {
            put(zip, "sparsity.bin", sparsity);
          }
          zip.finish();
        });
  }

  private static void put(ZipOutputStream zip, String name, byte[] bytes) throws IOException {
    zip.putNextEntry(new ZipEntry(name));
    zip.write(bytes);
    zip.closeEntry();
  }

  public static Checkpoint read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "checkpoint: " + file + " does not exist; nothing to resume");
    }
    Map<String, byte[]> entries = new HashMap<>();
    try (InputStream in = Files.newInputStream(file);
        ZipInputStream zip = new ZipInputStream(in)) {
      ZipEntry e;
      while ((e = zip.getNextEntry()) != null) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        zip.transferTo(buf);
        entries.put(e.getName(), buf.toByteArray());
      }
    }
    if (!entries.containsKey("state.json") || !entries.containsKey("model.bin")) {
      throw new IllegalArgumentException(
          "checkpoint: "
              + file
              + " is not a SparseFlow checkpoint (state.json or model.bin missing)");
    }
    State state = Json.MAPPER.readValue(entries.get("state.json"), State.class);
    return new Checkpoint(state, entries.get("model.bin"), entries.get("sparsity.bin"));
  }
}
