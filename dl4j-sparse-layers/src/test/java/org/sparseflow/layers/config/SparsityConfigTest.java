package org.sparseflow.layers.config;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.ObjectMapper;

class SparsityConfigTest {

  private static SparsityConfig full() throws Exception {
    return SparsityConfig.builder()
        .pattern("block16")
        .sparsity(0.875)
        .distribution(DensityDistribution.ERK)
        .initialMask(InitialMask.MAGNITUDE)
        .seed(7)
        .include(".*attn.*", ".*mlp.*")
        .addExclude(".*head.*")
        .keepFirstDense(false)
        .keepLastDense(true)
        .attention("local:32+strided:32", 16, true, ".*attn.*")
        .mst(
            new ObjectMapper()
                .readTree(
                    "{\"schedule\":{\"warmup\":100,\"phases\":[0.5,0.9]},\"grow\":\"gradient\"}"))
        .build();
  }

  @Test
  void jsonAndYamlRoundTripsEqualOriginal() throws Exception {
    SparsityConfig c = full();
    SparsityConfig fromJson = SparsityConfig.fromJson(c.toJson());
    SparsityConfig fromYaml = SparsityConfig.fromYaml(c.toYaml());
    assertEquals(c, fromJson);
    assertEquals(c, fromYaml);
    assertEquals(c.toJson(), fromJson.toJson());
    assertEquals(
        c.getMst().get("schedule").get("warmup").asInt(),
        fromYaml.getMst().get("schedule").get("warmup").asInt());
    // defaults survive too
    SparsityConfig d = SparsityConfig.builder().build();
    assertEquals(d, SparsityConfig.fromYaml(d.toYaml()));
    assertNotEquals(d, c);
  }

  @Test
  void defaultsKeepEmbeddingsAndNormsDense() {
    SparsityConfig d = SparsityConfig.builder().build();
    for (String dense :
        new String[] {
          "wte", "wpe", "tok_emb", "block0_ln1_gain", "ln_f", "0_embedding_W", "layernorm_3"
        }) {
      assertFalse(d.selects(dense), dense);
    }
    for (String sparse : new String[] {"block0_wq", "mlp_fc_W", "2_W", "kernel", "lm_head"}) {
      assertTrue(d.selects(sparse), sparse);
    }
    assertTrue(d.isKeepFirstDense());
    assertTrue(d.isKeepLastDense());
  }

  @Test
  void yamlDocumentParses() {
    String yaml =
        """
        pattern: 2:4
        sparsity: 0.5
        distribution: er
        initialMask: RANDOM
        include: ['.*']
        attention:
          pattern: local:8
        mst:
          anything: [1, 2, {nested: true}]
        """;
    SparsityConfig c = SparsityConfig.fromYaml(yaml);
    assertEquals("2:4", c.getPattern());
    assertEquals(DensityDistribution.ER, c.getDistribution());
    assertEquals(0.5, c.targetDensity(), 1e-12);
    assertEquals(16, c.getAttention().getBlockSize());
    assertTrue(c.getMst().get("anything").get(2).get("nested").asBoolean());
  }

  @Test
  void badValuesNameFieldValueAndAllowed() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("sparsity: 1.5\n"));
    assertTrue(
        e.getMessage().contains("'sparsity'")
            && e.getMessage().contains("1.5")
            && e.getMessage().contains("[0, 1)"),
        e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("pattern: block12\n"));
    assertTrue(
        e.getMessage().contains("'pattern'")
            && e.getMessage().contains("block12")
            && e.getMessage().contains("block16"),
        e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("pattern: 4:2\n"));
    assertTrue(e.getMessage().contains("4:2"), e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("distribution: ERX\n"));
    assertTrue(
        e.getMessage().contains("distribution")
            && e.getMessage().contains("ERX")
            && e.getMessage().contains("UNIFORM"),
        e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("sparsty: 0.5\n"));
    assertTrue(
        e.getMessage().contains("sparsty") && e.getMessage().contains("sparsity"), e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.fromYaml("include: ['(']\n"));
    assertTrue(
        e.getMessage().contains("include[0]") && e.getMessage().contains("'('"), e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> SparsityConfig.fromYaml("attention:\n  pattern: diagonal:3\n"));
    assertTrue(
        e.getMessage().contains("attention.pattern") && e.getMessage().contains("diagonal:3"),
        e.getMessage());

    e =
        assertThrows(
            IllegalArgumentException.class, () -> SparsityConfig.builder().sparsity(-0.1).build());
    assertTrue(
        e.getMessage().contains("sparsity") && e.getMessage().contains("-0.1"), e.getMessage());
  }

  @Test
  void malformedYamlReportsLineAndColumn(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("broken.yaml");
    Files.writeString(f, "pattern: block16\nsparsity: [0.5\ndistribution: ER\n");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparsityConfig.load(f));
    assertTrue(e.getMessage().contains("broken.yaml"), e.getMessage());
    assertTrue(e.getMessage().matches("(?s).*line \\d+, column \\d+.*"), e.getMessage());

    Path j = dir.resolve("broken.json");
    Files.writeString(j, "{\"pattern\": \"block16\",, }");
    e = assertThrows(IllegalArgumentException.class, () -> SparsityConfig.load(j));
    assertTrue(
        e.getMessage().contains("broken.json") && e.getMessage().contains("line 1"),
        e.getMessage());
  }

  @Test
  void parsingNeverInstantiatesNamedClasses() {
    // a document that tries polymorphic typing: must be rejected as an unknown field, never loaded
    String evil = "{\"@class\":\"java.lang.ProcessBuilder\",\"pattern\":\"unstructured\"}";
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> SparsityConfig.fromJson(evil));
    assertTrue(e.getMessage().contains("@class"), e.getMessage());
    // class names inside the opaque mst node stay plain text
    SparsityConfig c = SparsityConfig.fromYaml("mst:\n  '@class': java.lang.ProcessBuilder\n");
    assertEquals("java.lang.ProcessBuilder", c.getMst().get("@class").asText());
  }

  @Test
  void resolveUsesSystemPropertyThenClasspath(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("cfg.yaml");
    Files.writeString(f, "pattern: block8\nsparsity: 0.75\n");
    String old = System.getProperty(SparsityConfig.SYSTEM_PROPERTY);
    try {
      System.setProperty(SparsityConfig.SYSTEM_PROPERTY, f.toString());
      assertEquals("block8", SparsityConfig.resolve().orElseThrow().getPattern());
    } finally {
      if (old == null) {
        System.clearProperty(SparsityConfig.SYSTEM_PROPERTY);
      } else {
        System.setProperty(SparsityConfig.SYSTEM_PROPERTY, old);
      }
    }
    if (System.getenv(SparsityConfig.ENV_VARIABLE) == null) {
      // test resources hold no sparseflow.yaml: no config means dense
      assertTrue(SparsityConfig.resolve().isEmpty());
    }
    SparsityConfig s =
        SparsityConfig.load(
            new ByteArrayInputStream("{\"sparsity\":0.25}".getBytes(StandardCharsets.UTF_8)),
            "x.json");
    assertEquals(0.25, s.getSparsity());
  }

  @Test
  void erkMatchesRigLFormulaWithDenseFallback() {
    Map<String, long[]> shapes = new LinkedHashMap<>();
    shapes.put("small", new long[] {8, 8}); // raw (8+8)/64 = 0.25
    shapes.put("mid", new long[] {64, 256}); // raw 320/16384
    shapes.put("big", new long[] {256, 1024}); // raw 1280/262144
    double g = 0.2;
    Map<String, Double> d = DensityDistribution.allocate(shapes, g, DensityDistribution.ERK);
    double total = 0, kept = 0;
    for (var e : shapes.entrySet()) {
      double n = e.getValue()[0] * e.getValue()[1];
      total += n;
      kept += n * d.get(e.getKey());
      assertTrue(d.get(e.getKey()) <= 1.0);
    }
    assertEquals(g, kept / total, 1e-9);
    // small layer would exceed 1 -> dense; the others keep the ER ratio between them
    assertEquals(1.0, d.get("small"), 0.0);
    assertEquals((320.0 / 16384) / (1280.0 / 262144), d.get("mid") / d.get("big"), 1e-9);
    // uniform: everyone gets the global density
    DensityDistribution.UNIFORM
        .allocate(shapes, g)
        .values()
        .forEach(v -> assertEquals(g, v, 1e-12));
    // global density 1 -> all dense
    DensityDistribution.ER.allocate(shapes, 1.0).values().forEach(v -> assertEquals(1.0, v, 1e-12));
    assertThrows(
        IllegalArgumentException.class,
        () -> DensityDistribution.allocate(shapes, 0.0, DensityDistribution.ER));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            DensityDistribution.allocate(
                Map.of("x", new long[] {0, 3}), 0.5, DensityDistribution.ER));
  }

  @Test
  void erOnGpt2SmallMatchesPublishedTable() {
    // mst-reference.md 3.2: GPT-2 small at s=0.9 -> c_attn 0.892, c_proj 0.838, mlp 0.899, lm_head
    // 0.918 (sparsity)
    Map<String, long[]> shapes = new LinkedHashMap<>();
    for (int b = 0; b < 12; b++) {
      shapes.put(b + "_attn", new long[] {2304, 768});
      shapes.put(b + "_proj", new long[] {768, 768});
      shapes.put(b + "_fc", new long[] {3072, 768});
      shapes.put(b + "_mlpproj", new long[] {768, 3072});
    }
    shapes.put("lm_head", new long[] {50304, 768});
    Map<String, Double> d = DensityDistribution.ER.allocate(shapes, 0.1);
    assertEquals(0.892, 1 - d.get("0_attn"), 5e-4);
    assertEquals(0.838, 1 - d.get("0_proj"), 5e-4);
    assertEquals(0.899, 1 - d.get("0_fc"), 5e-4);
    assertEquals(0.918, 1 - d.get("lm_head"), 5e-4);
  }
}
