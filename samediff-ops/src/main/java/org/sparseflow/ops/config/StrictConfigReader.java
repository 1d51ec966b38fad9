package org.sparseflow.ops.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import org.nd4j.shade.jackson.core.JsonFactory;
import org.nd4j.shade.jackson.core.JsonLocation;
import org.nd4j.shade.jackson.core.JsonParser;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.core.JsonToken;
import org.nd4j.shade.jackson.databind.DeserializationFeature;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLFactory;
import org.nd4j.shade.jackson.dataformat.yaml.YAMLParser;
import org.nd4j.shade.yaml.snakeyaml.Yaml;
import org.nd4j.shade.yaml.snakeyaml.error.Mark;
import org.nd4j.shade.yaml.snakeyaml.error.MarkedYAMLException;
import org.nd4j.shade.yaml.snakeyaml.error.YAMLException;
import org.nd4j.shade.yaml.snakeyaml.events.AliasEvent;
import org.nd4j.shade.yaml.snakeyaml.events.DocumentStartEvent;
import org.nd4j.shade.yaml.snakeyaml.events.Event;
import org.nd4j.shade.yaml.snakeyaml.events.NodeEvent;

/**
 * The one strict reader for configuration documents. {@link #readFile} returns the document's tree
 * after checking, in order: size (at most {@link #MAX_BYTES}), UTF-8 (the first bad byte's offset
 * is named), syntax, exactly one document, no duplicate key and no YAML anchor or alias (rejected:
 * Jackson would read {@code *name} as the text {@code name}). {@link #bind} maps a tree onto a
 * class with unknown fields rejected, listing the allowed ones. Every failure is an {@link
 * IllegalArgumentException} whose message is one line: {@code <what> <source>[ at line L, column
 * C]: <problem>; allowed: <...>}.
 */
public final class StrictConfigReader {

  /** Largest configuration file accepted, in bytes (1 MiB). */
  public static final long MAX_BYTES = 1L << 20;

  /** Document syntax. JSON is picked by a {@code .json} file name, YAML otherwise. */
  public enum Format {
    JSON,
    YAML;

    /** JSON for names ending in {@code .json}, YAML for everything else. */
    public static Format ofName(String name) {
      return name != null && name.toLowerCase(Locale.ROOT).endsWith(".json") ? JSON : YAML;
    }
  }

  private static final JsonFactory JSON_FACTORY = new JsonFactory();
  private static final YAMLFactory YAML_FACTORY = new YAMLFactory();
  private static final ObjectMapper JSON_TREE = new ObjectMapper(JSON_FACTORY);
  private static final ObjectMapper YAML_TREE = new ObjectMapper(YAML_FACTORY);

  private StrictConfigReader() {}

  /**
   * Configures {@code m} for strict binding: unknown fields, nulls for primitives, floats for ints
   * and trailing tokens are errors. Returns {@code m}.
   */
  public static ObjectMapper strict(ObjectMapper m) {
    m.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, true);
    m.configure(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, true);
    m.configure(DeserializationFeature.ACCEPT_FLOAT_AS_INT, false);
    m.configure(DeserializationFeature.FAIL_ON_TRAILING_TOKENS, true);
    m.configure(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY, true);
    return m;
  }

  /**
   * Reads and checks a configuration file; {@code what} names the kind of document in errors (e.g.
   * "Sparsity config"). The format follows the file name ({@link Format#ofName}).
   */
  public static JsonNode readFile(Path file, String what) {
    if (file == null) {
      throw new IllegalArgumentException(what + ": no file given; allowed: a YAML or JSON file");
    }
    byte[] bytes;
    try {
      if (Files.isDirectory(file)) {
        throw new IllegalArgumentException(
            what + " " + file + " is a directory; allowed: a YAML or JSON file");
      }
      long size = Files.size(file);
      if (size > MAX_BYTES) {
        throw tooLarge(what, file.toString(), size);
      }
      try (InputStream in = Files.newInputStream(file)) {
        // read at most one byte past the cap: the file may grow after the size check
        bytes = in.readNBytes((int) MAX_BYTES + 1);
      }
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException(what + " " + file + " does not exist");
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + what + " " + file + ": " + e);
    }
    return readBytes(bytes, file.toString(), Format.ofName(file.toString()), what);
  }

  /** Reads and checks a document held in memory (e.g. a classpath resource). */
  public static JsonNode readBytes(byte[] bytes, String source, Format format, String what) {
    if (bytes.length > MAX_BYTES) {
      throw tooLarge(what, source, bytes.length);
    }
    return readText(decodeUtf8(bytes, source, what), source, format, what);
  }

  /** Reads and checks a document given as text. */
  public static JsonNode readText(String text, String source, Format format, String what) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException(
          what + " " + source + " is empty; allowed: one " + format + " mapping");
    }
    if (text.length() > MAX_BYTES) {
      throw tooLarge(what, source, text.length());
    }
    if (format == Format.YAML) {
      checkYamlEvents(text, source, what);
    }
    JsonFactory factory = format == Format.JSON ? JSON_FACTORY : YAML_FACTORY;
    try (JsonParser p = factory.createParser(text)) {
      checkStructure(p, source, what);
    } catch (JsonProcessingException e) {
      throw syntax(e, source, format, what);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + what + " " + source + ": " + e);
    }
    try {
      JsonNode root = (format == Format.JSON ? JSON_TREE : YAML_TREE).readTree(text);
      if (root == null || root.isMissingNode()) {
        throw new IllegalArgumentException(
            what + " " + source + " holds no document; allowed: one " + format + " mapping");
      }
      return root;
    } catch (JsonProcessingException e) {
      throw syntax(e, source, format, what);
    }
  }

  /**
   * Binds {@code node} to {@code type} with {@code mapper} (made strict by {@link #strict}). {@code
   * pathPrefix} (e.g. {@code "mst"}) is put before field paths in errors; empty for the root.
   */
  public static <T> T bind(
      ObjectMapper mapper,
      JsonNode node,
      Class<T> type,
      String source,
      String what,
      String pathPrefix) {
    try {
      return mapper.treeToValue(node, type);
    } catch (JsonProcessingException e) {
      throw describe(e, source, what, pathPrefix);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          what + " " + source + ": " + prefixed(pathPrefix, e.getMessage()), e);
    }
  }

  /**
   * Turns a Jackson binding failure into a one-line error naming source, field, value and what is
   * allowed.
   */
  public static IllegalArgumentException describe(
      JsonProcessingException e, String source, String what, String pathPrefix) {
    return BindingErrors.describe(e, source, what, pathPrefix);
  }

  private static String prefixed(String prefix, String msg) {
    return prefix == null || prefix.isEmpty() ? msg : "in '" + prefix + "': " + msg;
  }

  /**
   * YAML structure from the YAML parser's own events (Jackson does not report anchors on scalars):
   * one document, no anchor, no alias.
   */
  private static void checkYamlEvents(String text, String source, String what) {
    int documents = 0;
    try {
      for (Event e : new Yaml().parse(new StringReader(text))) {
        Mark m = e.getStartMark();
        String at =
            m == null ? "" : " at line " + (m.getLine() + 1) + ", column " + (m.getColumn() + 1);
        if (e instanceof AliasEvent a) {
          throw new IllegalArgumentException(
              what
                  + " "
                  + source
                  + at
                  + ": YAML alias '*"
                  + a.getAnchor()
                  + "' is not supported; allowed: plain values (write the value out)");
        }
        if (e instanceof NodeEvent n && n.getAnchor() != null) {
          throw new IllegalArgumentException(
              what
                  + " "
                  + source
                  + at
                  + ": YAML anchor '&"
                  + n.getAnchor()
                  + "' is not supported; allowed: plain values (anchors and aliases are rejected)");
        }
        if (e instanceof DocumentStartEvent && ++documents > 1) {
          throw new IllegalArgumentException(
              what
                  + " "
                  + source
                  + at
                  + ": a second document starts here; allowed: exactly one document (no '---' or"
                  + " extra values)");
        }
      }
    } catch (MarkedYAMLException e) {
      Mark m = e.getProblemMark();
      String at =
          m == null ? "" : " at line " + (m.getLine() + 1) + ", column " + (m.getColumn() + 1);
      throw new IllegalArgumentException(
          what + " " + source + at + ": malformed YAML (" + firstLine(e.getProblem()) + ")");
    } catch (YAMLException e) {
      throw new IllegalArgumentException(
          what + " " + source + ": malformed YAML (" + firstLine(e.getMessage()) + ")");
    }
  }

  /**
   * Walks every token: one root value only, no duplicate key in any mapping, no anchor or alias.
   */
  private static void checkStructure(JsonParser p, String source, String what) throws IOException {
    Deque<Set<String>> keys = new ArrayDeque<>();
    Deque<String> path = new ArrayDeque<>();
    int depth = 0;
    int roots = 0;
    JsonToken t;
    while ((t = p.nextToken()) != null) {
      if (p instanceof YAMLParser y) {
        if (y.isCurrentAlias()) {
          throw at(
              p,
              what,
              source,
              "YAML alias '*"
                  + p.getText()
                  + "' is not supported; allowed: plain values (write the value out)");
        }
        if (y.getObjectId() != null) {
          throw at(
              p,
              what,
              source,
              "YAML anchor '&"
                  + y.getObjectId()
                  + "' is not supported; allowed: plain values (anchors and aliases are rejected)");
        }
      }
      if (depth == 0 && t != JsonToken.END_OBJECT && t != JsonToken.END_ARRAY) {
        roots++;
        if (roots > 1) {
          throw at(
              p,
              what,
              source,
              "a second document starts here; allowed: exactly one document (no '---' or"
                  + " extra values)");
        }
      }
      switch (t) {
        case START_OBJECT -> {
          keys.push(new HashSet<>());
          depth++;
        }
        case START_ARRAY -> {
          keys.push(new HashSet<>());
          path.push("[]");
          depth++;
        }
        case END_OBJECT, END_ARRAY -> {
          keys.pop();
          if (t == JsonToken.END_ARRAY) {
            path.pop();
          }
          depth--;
        }
        case FIELD_NAME -> {
          String name = p.getCurrentName();
          if (!keys.peek().add(name)) {
            throw at(
                p,
                what,
                source,
                "duplicate key '" + name + "'; allowed: each key once per mapping");
          }
        }
        default -> {
          // scalars need no check
        }
      }
    }
  }

  private static IllegalArgumentException at(
      JsonParser p, String what, String source, String problem) {
    JsonLocation loc = p.getTokenLocation();
    return new IllegalArgumentException(what + " " + source + where(loc) + ": " + problem);
  }

  private static String where(JsonLocation loc) {
    return loc == null || loc.getLineNr() < 1
        ? ""
        : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
  }

  private static IllegalArgumentException syntax(
      JsonProcessingException e, String source, Format format, String what) {
    return new IllegalArgumentException(
        what
            + " "
            + source
            + where(e.getLocation())
            + ": malformed "
            + format
            + " ("
            + firstLine(e.getOriginalMessage())
            + ")",
        e);
  }

  private static IllegalArgumentException tooLarge(String what, String source, long size) {
    return new IllegalArgumentException(
        what
            + " "
            + source
            + " is "
            + size
            + " bytes; allowed: at most "
            + MAX_BYTES
            + " bytes (1 MiB)");
  }

  /** Decodes strict UTF-8 (a leading BOM is dropped); the error names the first bad byte. */
  static String decodeUtf8(byte[] bytes, String source, String what) {
    int start =
        bytes.length >= 3
                && (bytes[0] & 0xff) == 0xEF
                && (bytes[1] & 0xff) == 0xBB
                && (bytes[2] & 0xff) == 0xBF
            ? 3
            : 0;
    CharsetDecoder dec =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(bytes, start, bytes.length - start);
    CharBuffer out = CharBuffer.allocate(bytes.length);
    CoderResult r = dec.decode(in, out, true);
    if (!r.isError()) {
      r = dec.flush(out);
    }
    if (r.isError()) {
      int offset = in.position();
      throw new IllegalArgumentException(
          what
              + " "
              + source
              + " is not valid UTF-8: byte 0x"
              + String.format(Locale.ROOT, "%02X", bytes[offset] & 0xff)
              + " at byte offset "
              + offset
              + "; allowed: UTF-8 text");
    }
    out.flip();
    String text = out.toString();
    if (text.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          what
              + " "
              + source
              + " contains a NUL character at byte offset "
              + indexOfZero(bytes)
              + "; allowed: UTF-8 text");
    }
    return text;
  }

  private static int indexOfZero(byte[] b) {
    for (int i = 0; i < b.length; i++) {
      if (b[i] == 0) {
        return i;
      }
    }
    return -1;
  }

  static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return (nl >= 0 ? s.substring(0, nl) : s).trim();
  }

  /** For callers that decode on their own: throws like {@link #readBytes} on bad UTF-8. */
  public static String utf8(byte[] bytes, String source, String what) {
    return decodeUtf8(bytes, source, what);
  }
}
