package org.sparseflow.train;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * A resumable checkpoint: one zip holding {@code state.json} (trainer state and full config),
 * {@code model.bin} (the model with its optimizer state) and optionally {@code sparsity.bin} (the
 * sparsity driver's state, e.g. MST masks schedule position and RNG), and {@code manifest.json}
 * (size and SHA-256 of every other entry). Written with {@link AtomicFiles}, so a crash while
 * saving leaves the previous checkpoint intact; {@link #read} checks everything before a run
 * changes.
 */
public final class Checkpoint {

  public static final String FILE_NAME = "checkpoint.zip";

  private static final String STATE = "state.json";
  private static final String MODEL = "model.bin";
  private static final String SPARSITY = "sparsity.bin";
  private static final String MANIFEST = "manifest.json";

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

    /** Checks value ranges; errors name {@code file}, the field, the value and what is allowed. */
    void validate(Path file) {
      if (formatVersion != 1) {
        throw bad(file, "formatVersion", formatVersion, "1");
      }
      if (config == null) {
        throw corrupt(file, "state.json has no 'config'");
      }
      try {
        config.validate();
      } catch (IllegalArgumentException e) {
        throw corrupt(file, "state.json config: " + e.getMessage());
      }
      if (step < 0 || step > config.steps) {
        throw bad(file, "step", step, "0.." + config.steps + " (the run's total steps)");
      }
      if (!(elapsedSeconds >= 0) || Double.isInfinite(elapsedSeconds)) {
        throw bad(file, "elapsedSeconds", elapsedSeconds, "a finite number >= 0");
      }
      if (!(cumulativeFlops >= 0) || Double.isInfinite(cumulativeFlops)) {
        throw bad(file, "cumulativeFlops", cumulativeFlops, "a finite number >= 0");
      }
      if (!"dl4j".equals(modelKind) && !"samediff".equals(modelKind)) {
        throw bad(file, "modelKind", modelKind, "dl4j or samediff");
      }
      if (vocabulary == null
          || vocabulary.length() < 2
          || vocabulary.chars().distinct().count() != vocabulary.length()) {
        throw bad(file, "vocabulary", vocabulary, "at least 2 distinct characters, each once");
      }
      if (corpusSha256 == null || corpusSha256.isBlank()) {
        throw bad(file, "corpusSha256", corpusSha256, "the corpus's SHA-256 (hex)");
      }
    }

    private static IllegalArgumentException bad(
        Path file, String field, Object value, String allowed) {
      return corrupt(file, "state.json field '" + field + "' = " + value + "; allowed: " + allowed);
    }
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
    byte[] stateBytes = Json.pretty(state).getBytes(StandardCharsets.UTF_8);
    Map<String, byte[]> entries = new LinkedHashMap<>();
    entries.put(STATE, stateBytes);
    entries.put(MODEL, model);
    if (sparsity != null) {
      entries.put(SPARSITY, sparsity);
    }
    ObjectNode manifest = Json.object();
    manifest.put("formatVersion", 1);
    ObjectNode list = manifest.putObject("entries");
    for (Map.Entry<String, byte[]> e : entries.entrySet()) {
      ObjectNode n = list.putObject(e.getKey());
      n.put("size", e.getValue().length);
      n.put("sha256", sha256(e.getValue()));
    }
    AtomicFiles.write(
        file,
        out -> {
          ZipOutputStream zip = new ZipOutputStream(out);
          for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            put(zip, e.getKey(), e.getValue());
          }
          // written last: a reader that finds it knows every entry before it was complete
          put(zip, MANIFEST, Json.pretty(manifest).getBytes(StandardCharsets.UTF_8));
          zip.finish();
        });
  }

  private static void put(ZipOutputStream zip, String name, byte[] bytes) throws IOException {
    zip.putNextEntry(new ZipEntry(name));
    zip.write(bytes);
    zip.closeEntry();
  }

  /**
   * Reads and checks a checkpoint without changing anything: the zip's central directory and every
   * entry's CRC, the manifest's sizes and SHA-256 sums (checkpoints written before the manifest
   * existed are read without it), the state's JSON and value ranges, and that model.bin's format
   * matches the recorded model kind. Failures are {@link IllegalArgumentException}s that name the
   * file and the problem, e.g. {@code checkpoint runs/x/checkpoint.zip is corrupt: entry state.json
   * fails its checksum}.
   */
  public static Checkpoint read(Path file) throws IOException {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException(
          "checkpoint " + file + " does not exist; nothing to resume");
    }
    Map<String, byte[]> entries = readEntries(file);
    for (String required : List.of(STATE, MODEL)) {
      if (!entries.containsKey(required)) {
        throw corrupt(file, "entry " + required + " is missing (not a SparseFlow checkpoint?)");
      }
    }
    if (entries.containsKey(MANIFEST)) {
      checkManifest(file, entries);
    }
    State state;
    try {
      state = Json.MAPPER.readValue(entries.get(STATE), State.class);
    } catch (IOException e) {
      throw corrupt(file, "entry state.json is not a valid trainer state (" + firstLine(e) + ")");
    }
    if (state == null) {
      throw corrupt(file, "entry state.json is empty");
    }
    state.validate(file);
    byte[] model = entries.get(MODEL);
    boolean zip = model.length >= 4 && model[0] == 'P' && model[1] == 'K';
    if ("dl4j".equals(state.modelKind) != zip) {
      throw corrupt(
          file,
          "entry model.bin is "
              + (zip ? "a zip (DL4J)" : "not a zip")
              + " but state.json says the model kind is '"
              + state.modelKind
              + "'");
    }
    return new Checkpoint(state, model, entries.get(SPARSITY));
  }

  private static Map<String, byte[]> readEntries(Path file) throws IOException {
    Set<String> listed = new HashSet<>();
    // the central directory: a truncated file has none
    try (ZipFile z = new ZipFile(file.toFile())) {
      z.stream().forEach(e -> listed.add(e.getName()));
    } catch (FileSystemException e) {
      throw e; // not found, permission denied...: not corruption
    } catch (IOException e) {
      throw corrupt(file, "not a complete zip file (" + firstLine(e) + ")");
    } catch (RuntimeException e) {
      // e.g. an entry name that is not valid UTF-8
      throw corrupt(file, "the zip's directory is damaged (" + firstLine(e) + ")");
    }
    Map<String, byte[]> entries = new HashMap<>();
    // the local entries, each checked against its CRC and sizes by ZipInputStream
    try (InputStream in = Files.newInputStream(file);
        ZipInputStream zip = new ZipInputStream(in)) {
      ZipEntry e;
      while ((e = zip.getNextEntry()) != null) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try {
          zip.transferTo(buf);
        } catch (IOException bad) {
          throw corrupt(file, "entry " + e.getName() + " is damaged (" + firstLine(bad) + ")");
        }
        if (entries.put(e.getName(), buf.toByteArray()) != null) {
          throw corrupt(file, "entry " + e.getName() + " appears twice");
        }
      }
    } catch (FileSystemException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      throw corrupt(file, "the zip data is damaged (" + firstLine(e) + ")");
    }
    if (!entries.keySet().equals(listed)) {
      throw corrupt(file, "the zip's directory does not match its entries");
    }
    return entries;
  }

  private static void checkManifest(Path file, Map<String, byte[]> entries) {
    JsonNode m;
    try {
      m = Json.MAPPER.readTree(entries.get(MANIFEST));
    } catch (IOException e) {
      throw corrupt(file, "entry manifest.json is not valid JSON (" + firstLine(e) + ")");
    }
    JsonNode list = m == null ? null : m.get("entries");
    if (list == null || !list.isObject()) {
      throw corrupt(file, "entry manifest.json has no 'entries' mapping");
    }
    for (String name : entries.keySet()) {
      if (!name.equals(MANIFEST) && !list.has(name)) {
        throw corrupt(file, "entry " + name + " is not listed in manifest.json");
      }
    }
    Iterator<Map.Entry<String, JsonNode>> it = list.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      byte[] bytes = entries.get(e.getKey());
      if (bytes == null) {
        throw corrupt(file, "entry " + e.getKey() + " listed in manifest.json is missing");
      }
      if (e.getValue().path("size").asLong(-1) != bytes.length
          || !sha256(bytes).equals(e.getValue().path("sha256").asText())) {
        throw corrupt(file, "entry " + e.getKey() + " fails its checksum");
      }
    }
  }

  static IllegalArgumentException corrupt(Path file, String what) {
    return new IllegalArgumentException("checkpoint " + file + " is corrupt: " + what);
  }

  private static String firstLine(Exception e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    int nl = m.indexOf('\n');
    return nl >= 0 ? m.substring(0, nl).trim() : m;
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
