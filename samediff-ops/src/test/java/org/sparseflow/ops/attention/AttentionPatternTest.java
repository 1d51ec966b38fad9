package org.sparseflow.ops.attention;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.shade.jackson.databind.ObjectMapper;

class AttentionPatternTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "dense",
        "local:128",
        "local:128+strided:128",
        "fixed:128:1",
        "global:2+local:64",
        "random:3:seed=7",
        "fixed:64:4+global:1+random:2:seed=-5"
      })
  void toStringIsTheInverseOfParse(String spec) {
    AttentionPattern p = AttentionPattern.parse(spec);
    assertEquals(spec, p.toString());
    assertEquals(p, AttentionPattern.parse(p.toString()));
  }

  @Test
  void parseIsLenientOnCaseSpacesAndDefaults() {
    assertEquals("local:8+strided:4", AttentionPattern.parse(" Local:8 + STRIDED:4 ").toString());
    assertEquals("fixed:16:1", AttentionPattern.parse("fixed:16").toString());
    assertEquals("random:2:seed=0", AttentionPattern.parse("random:2").toString());
    AttentionPattern p = AttentionPattern.parse("fixed:16:3");
    assertEquals(List.of(AttentionPattern.Component.fixed(16, 3)), p.getComponents());
  }

  @Test
  void jsonRoundTripGivesAnEqualPattern() throws Exception {
    ObjectMapper om = new ObjectMapper();
    for (String spec :
        new String[] {"dense", "local:128+strided:128", "fixed:32:2+random:3:seed=9"}) {
      AttentionPattern p = AttentionPattern.parse(spec);
      String json = om.writeValueAsString(p);
      AttentionPattern back = om.readValue(json, AttentionPattern.class);
      assertEquals(p, back, json);
      assertEquals(spec, back.toString());
    }
    assertEquals(AttentionPattern.dense(), om.readValue("{}", AttentionPattern.class));
  }

  @Test
  void badSpecsNameTheValueAndWhatIsAllowed() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("sliding:128"));
    assertTrue(
        e.getMessage().contains("'sliding'") && e.getMessage().contains("allowed: dense, local"),
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("local:0"));
    assertTrue(
        e.getMessage().contains("window=0") && e.getMessage().contains("> 0"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("local:-3"));
    assertTrue(e.getMessage().contains("window=-3"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("strided:x"));
    assertTrue(e.getMessage().contains("stride='x'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("fixed:8:9"));
    assertTrue(
        e.getMessage().contains("summary=9") && e.getMessage().contains("[1, segmentLength=8]"),
        e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("local:8+"));
    assertTrue(e.getMessage().contains("empty component"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("random:2:7"));
    assertTrue(e.getMessage().contains("random:<numBlocks>[:seed=<long>]"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse("local"));
    assertTrue(e.getMessage().contains("local:<window>"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> AttentionPattern.parse(""));
    assertTrue(e.getMessage().contains("empty"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> AttentionPattern.parse("dense").layout(100, 16, 1));
    assertTrue(
        e.getMessage().contains("seqLen=100")
            && e.getMessage().contains("multiple of blockSize=16"),
        e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> AttentionPattern.parse("dense").layout(64, 0, 1));
    assertTrue(e.getMessage().contains("blockSize=0"), e.getMessage());
  }

  @Test
  void elementRulesFollowTheSparseTransformerDefinitions() {
    AttentionPattern local = AttentionPattern.parse("local:4");
    assertTrue(local.allows(10, 7) && !local.allows(10, 6) && !local.allows(10, 11));
    AttentionPattern strided = AttentionPattern.parse("strided:4");
    assertTrue(strided.allows(10, 6) && strided.allows(10, 2) && !strided.allows(10, 5));
    AttentionPattern fixed = AttentionPattern.parse("fixed:4:1");
    assertTrue(
        fixed.allows(10, 8) && fixed.allows(10, 3) && fixed.allows(10, 7) && !fixed.allows(10, 6));
    AttentionPattern global = AttentionPattern.parse("global:2");
    assertTrue(global.allows(10, 1) && !global.allows(10, 2) && global.allows(10, 10));
    // the density table of docs research (n=1024, stride 128): local 0.234, fixed 0.133
    assertEquals(
        122944.0 / 524800, AttentionPattern.parse("local:128").elementDensity(1024), 1e-12);
    assertEquals(
        69632.0 / 524800, AttentionPattern.parse("fixed:128:1").elementDensity(1024), 1e-12);
    assertEquals(
        126528.0 / 524800,
        AttentionPattern.parse("local:128+strided:128").elementDensity(1024),
        1e-12);
  }

  @Test
  void localWindowBecomesTheBlockCoverOfTheWindow() {
    // local:128 with block 64: key blocks I-2..I (query i sees between 128 and 192 keys, itself
    // included)
    BlockLayout l = AttentionPattern.parse("local:128").layout(1024, 64, 1);
    for (int i = 0; i < 16; i++) {
      int[] expect = IntStream.rangeClosed(Math.max(0, i - 2), i).toArray();
      assertEquals(Arrays.toString(expect), Arrays.toString(l.keyBlocks(0, i)));
    }
    for (int i = 0; i < 1024; i++) {
      int seen = 0;
      for (int j = 0; j <= i; j++) {
        if (l.isKept(0, i, j)) {
          seen++;
        }
      }
      assertTrue(seen >= Math.min(i + 1, 128) && seen <= 128 + 64, "row " + i + " sees " + seen);
    }
    // with block 128 the same window needs only blocks I-1..I
    assertEquals(
        2, AttentionPattern.parse("local:128").layout(1024, 128, 1).keyBlocks(0, 5).length);
    assertFalse(l.hasExtras());
  }

  @Test
  void stridedKeysAreExactExtrasNotDenseBlockColumns() {
    BlockLayout l = AttentionPattern.parse("local:128+strided:128").layout(2048, 64, 8);
    // strided contributes per-row extras, the tiles stay those of the local window
    assertEquals(
        AttentionPattern.parse("local:128").layout(2048, 64, 1).keptBlockCount(0),
        l.keptBlockCount(0));
    assertTrue(l.hasExtras());
    // row 2047: keys 2047-128k outside tiles 29..31 (keys >= 1856) -> 1791, 1663, ..., 127
    int[] ex = l.extraKeys(0, 2047);
    assertEquals(14, ex.length);
    assertEquals(127, ex[0]);
    assertEquals(1791, ex[ex.length - 1]);
    assertTrue(l.density() < 0.2, "density " + l.density());
  }

  @Test
  void randomBlocksDependOnSeedAndHead() {
    BlockLayout a = AttentionPattern.parse("random:2:seed=1").layout(256, 16, 2);
    BlockLayout b = AttentionPattern.parse("random:2:seed=1").layout(256, 16, 2);
    BlockLayout c = AttentionPattern.parse("random:2:seed=2").layout(256, 16, 2);
    assertEquals(Arrays.deepToString(a.keptBlocks(0)), Arrays.deepToString(b.keptBlocks(0)));
    assertNotEquals(Arrays.deepToString(a.keptBlocks(0)), Arrays.deepToString(c.keptBlocks(0)));
    assertNotEquals(Arrays.deepToString(a.keptBlocks(0)), Arrays.deepToString(a.keptBlocks(1)));
    for (int i = 0; i < 16; i++) {
      assertEquals(
          1 + Math.min(2, i),
          a.keyBlocks(1, i).length); // diagonal + min(R, I) distinct earlier blocks
    }
  }

  @Test
  void fromBlocksRejectsFutureBlocksAndAddsTheDiagonal() {
    boolean[][][] g = new boolean[1][4][4];
    g[0][2][0] = true;
    BlockLayout l = BlockLayout.fromBlocks(g, 16, 4);
    assertEquals(5, l.keptBlockCount(0));
    g[0][1][3] = true;
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> BlockLayout.fromBlocks(g, 16, 4));
    assertTrue(
        e.getMessage().contains("grids[0][1][3]") && e.getMessage().contains("causality"),
        e.getMessage());
  }

  private static void assertFalse(boolean b) {
    Assertions.assertFalse(b);
  }
}
