package org.sparseflow.examples.data;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * A UTF-8 training text with its provenance: a display name, where it came from, and the SHA-256 of
 * its bytes (recorded in every run summary so a run can be tied to the exact data).
 */
public final class Corpus {

  /** Classpath location of the bundled default corpus (Moby-Dick; attribution next to it). */
  public static final String BUNDLED_RESOURCE = "/corpus/moby-dick.txt";

  /** Name used on the command line and in summaries for the bundled corpus. */
  public static final String BUNDLED_NAME = "bundled:moby-dick";

  /**
   * Name of the second bundled corpus: State of the Union addresses 1790-1835 (public domain), for
   * checking that settings chosen on Moby-Dick transfer.
   */
  public static final String SECOND_NAME = "bundled:state-of-the-union";

  /** Classpath location of the second bundled corpus. */
  public static final String SECOND_RESOURCE = "/corpus/state-of-the-union.txt";

  /** The names {@link #resolve} accepts for bundled corpora. */
  public static final List<String> BUNDLED_NAMES = List.of(BUNDLED_NAME, SECOND_NAME);

  private final String name;
  private final String source;
  private final String text;
  private final String sha256;
  private final long sizeBytes;

  private Corpus(String name, String source, byte[] bytes) {
    this.name = name;
    this.source = source;
    this.text = decodeStrict(bytes, source);
    if (text.isEmpty()) {
      throw new IllegalArgumentException("corpus: " + source + " is empty; expected UTF-8 text");
    }
    this.sha256 = sha256(bytes);
    this.sizeBytes = bytes.length;
  }

  /** The corpus shipped in the jar (Moby-Dick, public domain). */
  public static Corpus bundled() {
    return fromClasspath(BUNDLED_NAME, BUNDLED_RESOURCE);
  }

  /** The second bundled corpus (State of the Union addresses 1790-1835, public domain). */
  public static Corpus second() {
    return fromClasspath(SECOND_NAME, SECOND_RESOURCE);
  }

  private static Corpus fromClasspath(String name, String resource) {
    try (InputStream in = Corpus.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException(
            "bundled corpus " + resource + " is missing from the classpath");
      }
      return new Corpus(name, "classpath:" + resource, in.readAllBytes());
    } catch (IOException e) {
      throw new IllegalStateException(
          "cannot read bundled corpus " + resource + ": " + e.getMessage(), e);
    }
  }

  /**
   * Reads a UTF-8 text file; missing, unreadable, empty or non-UTF-8 files are rejected with the
   * path.
   */
  public static Corpus fromFile(Path file) {
    if (!Files.exists(file)) {
      throw new IllegalArgumentException("corpus: file " + file + " does not exist");
    }
    if (Files.isDirectory(file)) {
      throw new IllegalArgumentException(
          "corpus: " + file + " is a directory; expected a UTF-8 text file");
    }
    try {
      return new Corpus(
          file.getFileName().toString(),
          file.toAbsolutePath().toString(),
          Files.readAllBytes(file));
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("corpus: file " + file + " does not exist");
    } catch (IOException e) {
      throw new IllegalArgumentException("corpus: cannot read " + file + ": " + e.getMessage());
    }
  }

  /**
   * {@code null}, empty or {@value #BUNDLED_NAME} selects the bundled corpus, {@value #SECOND_NAME}
   * the second one; another {@code bundled:} name is an error listing the allowed ones; anything
   * else is a file path.
   */
  public static Corpus resolve(String spec) {
    if (spec == null || spec.isBlank() || spec.equals(BUNDLED_NAME) || spec.equals("bundled")) {
      return bundled();
    }
    if (spec.equals(SECOND_NAME)) {
      return second();
    }
    if (spec.startsWith("bundled:") && !Files.exists(Path.of(spec))) {
      throw new IllegalArgumentException(
          "corpus: " + spec + " is not a bundled corpus; allowed: " + BUNDLED_NAMES + " or a file");
    }
    return fromFile(Path.of(spec));
  }

  /** An in-memory corpus (tests, notebooks). */
  public static Corpus ofText(String name, String text) {
    return new Corpus(name, "memory:" + name, text.getBytes(StandardCharsets.UTF_8));
  }

  private static String decodeStrict(byte[] bytes, String source) {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException(
          "corpus: " + source + " is not valid UTF-8 text (" + e.getMessage() + ")");
    }
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  public String name() {
    return name;
  }

  /** Where the text came from: an absolute path, {@code classpath:...} or {@code memory:...}. */
  public String source() {
    return source;
  }

  public String text() {
    return text;
  }

  /** Lower-case hex SHA-256 of the file's bytes. */
  public String sha256() {
    return sha256;
  }

  public long sizeBytes() {
    return sizeBytes;
  }

  /** Number of characters (code points), i.e. tokens for the character tokenizer. */
  public int lengthChars() {
    return text.codePointCount(0, text.length());
  }

  @Override
  public String toString() {
    return name + " (" + sizeBytes + " bytes, sha256 " + sha256.substring(0, 12) + "...)";
  }
}
