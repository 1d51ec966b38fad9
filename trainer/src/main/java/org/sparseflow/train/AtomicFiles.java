package org.sparseflow.train;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Crash-safe file replacement: write to a temporary file in the same directory, fsync it, then
 * rename it over the target atomically and fsync the directory. A reader sees either the old
 * complete file or the new complete file, never a partial one; if writing fails the old file is
 * left untouched.
 */
public final class AtomicFiles {

  /** Body that writes the new content. */
  @FunctionalInterface
  public interface Writer {
    void write(OutputStream out) throws IOException;
  }

  private AtomicFiles() {}

  public static void write(Path target, Writer writer) throws IOException {
    Path dir = target.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp");
    boolean moved = false;
    try {
      try {
        // createTempFile makes the file private (0600); run files are ordinary documents
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-r--r--"));
      } catch (UnsupportedOperationException notPosix) {
        // keep the default
      }
      try (FileChannel ch =
          FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
        OutputStream out = Channels.newOutputStream(ch);
        writer.write(out);
        out.flush();
        ch.force(true);
      }
      try {
        Files.move(
            tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException("cannot replace " + target + " atomically on this file system", e);
      }
      moved = true;
      fsyncDirectory(dir);
    } finally {
      if (!moved) {
        Files.deleteIfExists(tmp);
      }
    }
  }

  public static void writeString(Path target, String text) throws IOException {
    write(target, out -> out.write(text.getBytes(StandardCharsets.UTF_8)));
  }

  private static void fsyncDirectory(Path dir) {
    // Makes the rename itself durable. Not supported everywhere (e.g. Windows); the rename is still
    // atomic.
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException | UnsupportedOperationException ignored) {
      // best effort
    }
  }
}
