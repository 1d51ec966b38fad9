package org.sparseflow.train;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Layout of a run directory:
 *
 * <pre>
 *   checkpoint.zip   resumable state (model + optimizer + sparsity state + trainer state), atomic writes
 *   metrics.jsonl    one JSON record per step (val_loss on evaluation steps)
 *   summary.json     config, corpus hash, provenance and results; re-runs the experiment
 *   model.zip        the trained model, written when training completes: a DL4J ModelSerializer zip, or for
 *                    SameDiff models SameDiff's own format (SameDiff.load(file, true)); --model accepts both
 *   plots/           loss.png, val_loss_vs_flops.png, density.png (+ MST plots when MST ran)
 * </pre>
 */
public final class RunDirectory {

  private final Path path;

  private RunDirectory(Path path) {
    this.path = path;
  }

  /** A directory for a new run: must not exist, or be empty. */
  public static RunDirectory create(Path path) throws IOException {
    checkNew(path);
    Files.createDirectories(path);
    return new RunDirectory(path);
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

  /** An existing run directory with a checkpoint. */
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

  /** Default run directory name: runs/&lt;timestamp&gt;-&lt;model&gt;. */
  public static Path defaultPath(String model) {
    String stamp =
        java.time.LocalDateTime.now()
            .format(java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
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
