package org.sparseflow.ops.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.ops.config.StrictConfigReader.Format;

/** Issue 20 items 3, 10 and 11: every silent misread of a config document becomes a clear error. */
class StrictConfigReaderTest {

  @TempDir Path tmp;

  private static String yamlError(String text) {
    return assertThrows(
            IllegalArgumentException.class,
            () -> StrictConfigReader.readText(text, "c.yaml", Format.YAML, "Test config"))
        .getMessage();
  }

  private static void contains(String msg, String... parts) {
    for (String p : parts) {
      assertTrue(msg.contains(p), "'" + p + "' in: " + msg);
    }
    assertEquals(1, msg.split("\\R").length, "one line: " + msg);
  }

  @Test
  void plainDocumentsAreRead() {
    JsonNode n =
        StrictConfigReader.readText(
            "a: 1\nb: [x, y]\nc: {d: true}\n", "c.yaml", Format.YAML, "Test config");
    assertEquals(1, n.get("a").asInt());
    assertEquals("y", n.get("b").get(1).asText());
    JsonNode j =
        StrictConfigReader.readText("{\"a\": [1, 2]}", "c.json", Format.JSON, "Test config");
    assertEquals(2, j.get("a").get(1).asInt());
  }

  @Test
  void duplicateKeysAreRejectedAtEveryDepth() {
    contains(yamlError("a: 1\nb: 2\na: 3\n"), "c.yaml", "line 3", "duplicate key 'a'");
    contains(yamlError("m:\n  x: 1\n  x: 2\n"), "duplicate key 'x'");
    contains(yamlError("l:\n  - {x: 1, x: 1}\n"), "duplicate key 'x'");
    String json =
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    StrictConfigReader.readText(
                        "{\"a\": 1, \"a\": 2}", "c.json", Format.JSON, "Test config"))
            .getMessage();
    contains(json, "c.json", "duplicate key 'a'");
  }

  @Test
  void sameKeyInSiblingMappingsIsFine() {
    StrictConfigReader.readText("a: {x: 1}\nb: {x: 2}\n", "c.yaml", Format.YAML, "Test config");
  }

  @Test
  void extraDocumentsAreRejected() {
    contains(yamlError("a: 1\n---\na: 2\n"), "c.yaml", "line 2", "second document");
    contains(yamlError("---\na: 1\n---\n"), "second document");
    String json =
        assertThrows(
                IllegalArgumentException.class,
                () -> StrictConfigReader.readText("{} {}", "c.json", Format.JSON, "Test config"))
            .getMessage();
    contains(json, "second document");
  }

  @Test
  void anchorsAndAliasesAreRejectedNotReadAsText() {
    contains(yamlError("a: &x [1]\nb: *x\n"), "anchor '&x'", "line 1");
    // an alias to nothing would otherwise read as the text "name"
    contains(yamlError("b: *name\n"), "alias '*name'");
    contains(yamlError("base: &b {x: 1}\nother:\n  <<: *b\n"), "anchor");
    // anchors on plain scalars too (Jackson alone does not report these)
    contains(yamlError("pattern: &p block8\nsparsity: 0.5\n"), "anchor '&p'", "line 1");
    contains(yamlError("a: [x, &q y]\n"), "anchor '&q'");
  }

  @Test
  void emptyAndScalarDocuments() {
    contains(yamlError(""), "c.yaml is empty");
    contains(yamlError("# only a comment\n"), "c.yaml");
    contains(yamlError("a: [1, 2\n"), "malformed YAML");
  }

  @Test
  void nonUtf8NamesTheByteOffset() throws Exception {
    Path f = tmp.resolve("latin1.yaml");
    byte[] head = "pattern: block16\nsparsity: 0.5 # caf".getBytes(StandardCharsets.US_ASCII);
    byte[] bytes = new byte[head.length + 2];
    System.arraycopy(head, 0, bytes, 0, head.length);
    bytes[head.length] = (byte) 0xE9;
    bytes[head.length + 1] = '\n';
    Files.write(f, bytes);
    String msg =
        assertThrows(
                IllegalArgumentException.class, () -> StrictConfigReader.readFile(f, "Test config"))
            .getMessage();
    contains(msg, f.toString(), "not valid UTF-8", "0xE9", "byte offset " + head.length);
  }

  @Test
  void byteOrderMarkIsAccepted() {
    byte[] doc = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, 'a', ':', ' ', '1'};
    assertEquals(
        1,
        StrictConfigReader.readBytes(doc, "bom.yaml", Format.YAML, "Test config").get("a").asInt());
  }

  @Test
  void filesOverOneMebibyteAreRejectedBeforeParsing() throws Exception {
    Path f = tmp.resolve("big.yaml");
    Files.write(f, ("a: \"" + "x".repeat((int) StrictConfigReader.MAX_BYTES) + "\"\n").getBytes());
    contains(
        assertThrows(
                IllegalArgumentException.class, () -> StrictConfigReader.readFile(f, "Test config"))
            .getMessage(),
        "big.yaml",
        "at most 1048576 bytes");
  }

  @Test
  void missingFileAndDirectory() {
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () -> StrictConfigReader.readFile(tmp.resolve("no.yaml"), "Test config"))
            .getMessage(),
        "no.yaml does not exist");
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () -> StrictConfigReader.readFile(tmp, "Test config"))
            .getMessage(),
        "is a directory");
  }

  /** A bean for binding tests. */
  public static final class Bean {
    public int size = 1;
    public List<String> names = List.of();
    public Inner inner = new Inner();
  }

  /** Nested bean. */
  public static final class Inner {
    public double rate = 0.5;
  }

  @Test
  void bindingErrorsNameFieldValueAndAllowed() {
    ObjectMapper m = StrictConfigReader.strict(new ObjectMapper());
    JsonNode unknown =
        StrictConfigReader.readText("size: 2\nsizze: 3\n", "b.yaml", Format.YAML, "Test config");
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () -> StrictConfigReader.bind(m, unknown, Bean.class, "b.yaml", "Test config", ""))
            .getMessage(),
        "b.yaml",
        "unknown field 'sizze'",
        "[inner, names, size]");
    JsonNode nested =
        StrictConfigReader.readText("inner: {rat: 1}\n", "b.yaml", Format.YAML, "Test config");
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () -> StrictConfigReader.bind(m, nested, Bean.class, "b.yaml", "Test config", "s"))
            .getMessage(),
        "unknown field 's.inner.rat'",
        "[rate]");
    JsonNode wrongKind =
        StrictConfigReader.readText("names: {a: 1}\n", "b.yaml", Format.YAML, "Test config");
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    StrictConfigReader.bind(m, wrongKind, Bean.class, "b.yaml", "Test config", ""))
            .getMessage(),
        "field 'names'",
        "a list");
    JsonNode badNumber =
        StrictConfigReader.readText("size: lots\n", "b.yaml", Format.YAML, "Test config");
    contains(
        assertThrows(
                IllegalArgumentException.class,
                () ->
                    StrictConfigReader.bind(m, badNumber, Bean.class, "b.yaml", "Test config", ""))
            .getMessage(),
        "field 'size'",
        "'lots'");
  }
}
