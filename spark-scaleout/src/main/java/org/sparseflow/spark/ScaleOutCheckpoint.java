package org.sparseflow.spark;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
import org.sparseflow.mst.MstCheckpoint;
import org.sparseflow.mst.core.MstState;

/**
 * Checkpoint of a distributed MST run: one ModelSerializer zip ({@code model.zip} in the checkpoint
 * directory) with parameters (masks included), updater state and the driver's {@link MstState}
 * (entry {@value MstCheckpoint#ENTRY}, as written by {@link MstCheckpoint}). The MST step in the
 * state says which interval comes next, so the data cursor needs no separate file. Written to a
 * temp file and renamed, so a crash never leaves half a checkpoint.
 */
public final class ScaleOutCheckpoint {
  public static final String MODEL_FILE = "model.zip";

  private final Model model;
  private final MstState state;

  private ScaleOutCheckpoint(Model model, MstState state) {
    this.model = model;
    this.state = state;
  }

  public Model model() {
    return model;
  }

  public MstState state() {
    return state;
  }

  public static File file(File dir) {
    return new File(dir, MODEL_FILE);
  }

  public static boolean exists(File dir) {
    return dir != null && file(dir).isFile();
  }

  static void save(File dir, Model net, DriverMst mst) throws IOException {
    Files.createDirectories(dir.toPath());
    Path tmp = Files.createTempFile(dir.toPath(), "model", ".zip.tmp");
    try {
      MstCheckpoint.save(net, tmp.toFile(), mst.stateHolder());
      Files.move(
          tmp,
          file(dir).toPath(),
          StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }

  /** Loads model (with updater state) and MST state from a checkpoint directory. */
  public static ScaleOutCheckpoint load(File dir) throws IOException {
    File f = file(dir);
    if (!f.isFile()) {
      throw new IllegalArgumentException(
          "dir = "
              + dir
              + " holds no checkpoint; allowed: a directory with "
              + MODEL_FILE
              + " written by a scale-out trainer");
    }
    MstState st = MstCheckpoint.loadState(f);
    Model m;
    try {
      m = ModelSerializer.restoreMultiLayerNetwork(f, true);
    } catch (Exception notMln) {
      m = ModelSerializer.restoreComputationGraph(f, true);
    }
    return new ScaleOutCheckpoint(m, st);
  }

  static boolean isGraph(Model m) {
    return m instanceof ComputationGraph;
  }

  static boolean isMln(Model m) {
    return m instanceof MultiLayerNetwork;
  }
}
