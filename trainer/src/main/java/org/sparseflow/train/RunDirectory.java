package org.sparseflow.train;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

/**
 * Layout of a run directory (created atomically by {@link #create(Path, boolean)}):
 *
 * <pre>
 *   checkpoint.zip   resumable state (model + optimizer + sparsity state + trainer state), atomic
 * writes
 *   metrics.jsonl    one JSON record per step (val_loss on evaluation steps)
 *   summary.json     config, corpus hash, provenance and results; re-runs the experiment
 *   model.zip        the trained model, written when training completes: a DL4J ModelSerializer
 * zip, or for
 *                    SameDiff models SameDiff's own format (SameDiff.load(file, true)); --model
 * accepts both
 *   plots/           loss.png, val_loss_vs_flops.png, density.png (+ MST plots when MST ran)
 * </pre>
 */
public final class RunDirectory {

  private final Path path;

  private RunDirectory(Path path) {
    this.path = path;
  }

  /** Marker created in every new run directory; creating it is the atomic claim. */
  static final String MARKER = ".sparseflow-run";

  /** Most numbered suffixes tried for a default run directory name. */
  private static final int MAX_SUFFIX = 1000;

  /**
   * A directory for a new run: must not exist, or be empty (see {@link #create(Path, boolean)}).
   */
  public static RunDirectory create(Path path) throws IOException {
    return create(path, false);
  }

  /**
   * Claims a directory for a new run atomically, never "check, then create": the directory is
   * created with {@link Files#createDirectory} (fails if it exists), or, when it already exists and
   * is empty, claimed by creating {@value #MARKER} with CREATE_NEW. Two processes can therefore
   * never get the same directory. When {@code path} is taken, {@code suffixOnCollision} tries
   * {@code path-2}, {@code path-3}, ...; otherwise it fails naming {@code --out}.
   */
  public static RunDirectory create(Path path, boolean suffixOnCollision) throws IOException {
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    for (int i = 1; i <= MAX_SUFFIX; i++) {
      Path candidate = i == 1 ? path : path.resolveSibling(path.getFileName() + "-" + i);
      if (claim(candidate)) {
        return new RunDirectory(candidate);
      }
      if (!suffixOnCollision) {
        checkNew(candidate);
        throw new IllegalArgumentException(
            "--out: " + candidate + " was taken by another run; choose another --out");
      }
    }
    throw new IllegalArgumentException(
        "--out: " + path + " and " + MAX_SUFFIX + " numbered variants are all taken");
  }

  private static boolean claim(Path dir) throws IOException {
    try {
      Files.createDirectory(dir);
    } catch (FileAlreadyExistsException exists) {
      if (!Files.isDirectory(dir) || !Trainer.isEmptyDir(dir)) {
        return false;
      }
    }
    try {
      Files.createFile(dir.resolve(MARKER));
      return true;
    } catch (FileAlreadyExistsException raced) {
      return false;
    }
  }

  /**
   * Fails unless {@code path} can hold a new run (absent or an empty directory). Creates nothing.
   */
  public static void checkNew(Path path) throws IOException {
    if (Files.exists(path)) {
      if (!Files.isDirectory(path)) {
        throw new IllegalArgumentException(
            "--out: " + path + " is a file; expected a new or empty directory");
      }
      if (Files.exists(path.resolve(Checkpoint.FILE_NAME))) {
        throw new IllegalArgumentException(
            "--out: "
                + path
                + " already holds a run; resume it with --resume "
                + path
                + " or choose another --out");
      }
      if (!Trainer.isEmptyDir(path)) {
        throw new IllegalArgumentException(
            "--out: " + path + " is not empty; expected a new or empty directory");
      }
    }
  }

  /** An existing run directory with a checkpoint (errors name {@code --resume}). */
  public static RunDirectory open(Path path) {
    if (!Files.isDirectory(path)) {
      throw new IllegalArgumentException(
          "--resume: "
              + path
              + " is not a directory; expected a run directory written by 'sparseflow train'");
    }
    if (!Files.isRegularFile(path.resolve(Checkpoint.FILE_NAME))) {
      throw new IllegalArgumentException(
          "--resume: " + path + " has no " + Checkpoint.FILE_NAME + "; nothing to resume");
    }
    return new RunDirectory(path);
  }

  /** An existing run directory, whatever it holds (the caller checks the files it needs). */
  static RunDirectory existing(Path path) {
    return new RunDirectory(path);
  }

  /** Default run directory name: runs/&lt;timestamp&gt;-&lt;model&gt;. */
  public static Path defaultPath(String model) {
    String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
    String safe = model.replaceAll("[^A-Za-z0-9._-]", "_");
    if (safe.length() > 40) {
      safe = safe.substring(safe.length() - 40);
    }
    return Path.of("runs", stamp + "-" + safe);
  }

  public Path path() {
    return path;
  }

  public Path checkpoint() {
    return path.resolve(Checkpoint.FILE_NAME);
  }

  public Path metrics() {
    return path.resolve("metrics.jsonl");
  }

  public Path summary() {
    return path.resolve("summary.json");
  }

  public Path finalModel() {
    return path.resolve("model.zip");
  }

  public Path plots() {
    return path.resolve("plots");
  }
}
