package org.sparseflow.mst;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.util.ModelSerializer;
import org.nd4j.autodiff.samediff.SameDiff;
import org.sparseflow.mst.core.MstState;

/**
 * Saves and restores MST state together with the model.
 *
 * <ul>
 *   <li>DL4J: the ModelSerializer zip (with updater state) gets an extra entry {@value #ENTRY}
 *       holding the {@link MstState} JSON ({@code ModelSerializer.addObjectToFile}).
 *   <li>SameDiff: {@code sd.save(file, true)} plus a sidecar {@code <file>.mst.json}, written
 *       atomically.
 * </ul>
 *
 * Resume with {@code MstListener.resume(MstCheckpoint.loadState(file))}.
 */
public final class MstCheckpoint {
  public static final String ENTRY = "mst-state.json";

  private MstCheckpoint() {}

  public static void save(Model model, File file, MstListener mst) throws IOException {
    ModelSerializer.writeModel(model, file, true);
    ModelSerializer.addObjectToFile(file, ENTRY, mst.state().toJson());
  }

  public static void save(SameDiff sd, File file, MstListener mst) throws IOException {
    sd.save(file, true);
    writeAtomically(sidecar(file.toPath()), mst.state().toBytes());
  }

  /** Reads the state saved by either {@code save} method. */
  public static MstState loadState(File file) throws IOException {
    Path side = sidecar(file.toPath());
    if (Files.exists(side)) {
      return MstState.fromBytes(Files.readAllBytes(side));
    }
    if (!ModelSerializer.listObjectsInFile(file).contains(ENTRY)) {
      throw new IllegalArgumentException(
          "file = "
              + file
              + " holds no MST state; allowed: a model saved with "
              + "MstCheckpoint.save (entry "
              + ENTRY
              + " or sidecar "
              + side.getFileName()
              + ")");
    }
    String json = ModelSerializer.getObjectFromFile(file, ENTRY);
    return MstState.fromJson(json);
  }

  public static Path sidecar(Path model) {
    return model.resolveSibling(model.getFileName() + ".mst.json");
  }

  /** Writes to a temp file in the same directory and renames it over the target. */
  public static void writeAtomically(Path target, byte[] bytes) throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    Path tmp = Files.createTempFile(dir, target.getFileName().toString(), ".tmp");
    try {
      Files.write(tmp, bytes);
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(tmp);
    }
  }
}
