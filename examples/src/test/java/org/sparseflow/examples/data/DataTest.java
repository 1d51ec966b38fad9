package org.sparseflow.examples.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DataTest {

  @Property(tries = 200)
  void tokenizerRoundTripsAnyText(@ForAll @StringLength(min = 1, max = 200) String text) {
    CharTokenizer t = CharTokenizer.fit(text);
    assertEquals(text, t.decode(t.encode(text)));
    assertEquals(t, CharTokenizer.of(t.vocabulary()));
    assertEquals(text.codePoints().distinct().count(), t.vocabSize());
  }

  @Test
  void tokenizerNamesUnknownCharacter() {
    CharTokenizer t = CharTokenizer.fit("abc");
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> t.encode("abz"));
    assertTrue(
        e.getMessage().contains("'z'") && e.getMessage().contains("position 2"), e.getMessage());
  }

  @Test
  void secondBundledCorpusResolvesByNameAndDiffersFromTheFirst() {
    Corpus c = Corpus.resolve(Corpus.SECOND_NAME);
    assertEquals(Corpus.SECOND_NAME, c.name());
    assertTrue(c.text().startsWith("Fellow-Citizens of the Senate"), c.text().substring(0, 40));
    assertTrue(c.text().length() > 1_000_000, "about as large as the first: " + c.text().length());
    assertNotEquals(Corpus.bundled().sha256(), c.sha256());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Corpus.resolve("bundled:nope"));
    assertTrue(e.getMessage().contains("bundled:state-of-the-union"), e.getMessage());
  }

  @Test
  void bundledCorpusHasStableHashAndVocabulary() {
    Corpus c = Corpus.bundled();
    assertEquals(1_204_997, c.sizeBytes());
    assertEquals(64, c.sha256().length());
    assertEquals(c.sha256(), Corpus.bundled().sha256());
    assertTrue(CharTokenizer.fit(c.text()).vocabSize() < 128);
  }

  @Test
  void corpusFileErrorsNameThePath(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("nope.txt");
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> Corpus.fromFile(missing))
            .getMessage()
            .contains("nope.txt"));
    Path bad = dir.resolve("bad.txt");
    Files.write(bad, new byte[] {(byte) 0xC3, (byte) 0x28});
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> Corpus.fromFile(bad))
            .getMessage()
            .contains("UTF-8"));
    Path empty = dir.resolve("empty.txt");
    Files.write(empty, new byte[0]);
    assertTrue(
        assertThrows(IllegalArgumentException.class, () -> Corpus.fromFile(empty))
            .getMessage()
            .contains("empty"));
    Path ok = dir.resolve("ok.txt");
    Files.writeString(ok, "hello", StandardCharsets.UTF_8);
    Corpus c = Corpus.fromFile(ok);
    assertEquals(
        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        c.sha256()); // sha256("hello")
  }

  @Test
  void splitIsContiguousNinetyTen() {
    int[] tokens = new int[1000];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i;
    }
    TokenSplit s = TokenSplit.of(tokens, 0.9, 16);
    assertEquals(900, s.train().length);
    assertEquals(100, s.validation().length);
    assertEquals(899, s.train()[899]);
    assertEquals(900, s.validation()[0]);
  }

  @Test
  void testPartIsTheEndOfTheHeldOutTailAndDisjoint() {
    int[] tokens = new int[1000];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i;
    }
    TokenSplit s = TokenSplit.of(tokens, 0.9, 0.05, 16);
    assertEquals(900, s.train().length);
    assertEquals(50, s.validation().length);
    assertEquals(50, s.test().length);
    assertEquals(900, s.validation()[0]);
    assertEquals(949, s.validation()[49]);
    assertEquals(950, s.test()[0]);
    assertEquals(999, s.test()[49]);
    assertEquals(0, TokenSplit.of(tokens, 0.9, 16).test().length);
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> TokenSplit.of(tokens, 0.9, 0.1, 16));
    assertTrue(e.getMessage().startsWith("testFraction: 0.1 is outside"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> TokenSplit.of(tokens, 0.9, 0.01, 16));
    assertTrue(e.getMessage().contains("too small for context length 16"), e.getMessage());
    // the test part (1 % = 10 tokens) is the smallest: it needs 17 tokens, so 1701 + 1 in all
    assertTrue(e.getMessage().contains("90/9/1 train/validation/test split"), e.getMessage());
    assertTrue(e.getMessage().contains("at least 1701 characters"), e.getMessage());
  }

  @Test
  void splitRejectsCorpusTooSmallForContext() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> TokenSplit.of(new int[100], 0.9, 128));
    assertTrue(e.getMessage().contains("too small for context length 128"), e.getMessage());
  }

  @Property(tries = 50)
  void samplerIsAFunctionOfSeedAndStep(
      @ForAll @IntRange(min = 0, max = 10_000) int step, @ForAll long seed) {
    int[] tokens = new int[500];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i % 37;
    }
    BatchSampler a = new BatchSampler(tokens, 4, 16, seed);
    BatchSampler b = new BatchSampler(tokens, 4, 16, seed);
    b.windows(step + 1); // unrelated calls must not change later batches
    int[][] wa = a.windows(step), wb = b.windows(step);
    for (int i = 0; i < 4; i++) {
      assertArrayEquals(wa[i], wb[i]);
      assertEquals(17, wa[i].length);
      // windows are contiguous slices of the stream
      for (int j = 1; j < 17; j++) {
        assertEquals((wa[i][j - 1] + 1) % 37, wa[i][j]);
      }
    }
  }

  @Test
  void differentStepsGiveDifferentBatches() {
    int[] tokens = new int[10_000];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i;
    }
    BatchSampler s = new BatchSampler(tokens, 8, 16, 7);
    assertNotEquals(s.windows(0)[0][0], s.windows(1)[0][0]);
  }

  @Test
  void evaluationBatchesCoverTheStreamDeterministically() {
    int[] tokens = new int[1000];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i;
    }
    int[][][] b = BatchSampler.evaluationBatches(tokens, 9, 4, 10);
    assertEquals(3, b.length);
    assertEquals(4, b[0].length);
    assertEquals(2, b[2].length);
    assertEquals(0, b[0][0][0]);
    assertEquals(990, b[2][1][0]); // last window ends at the last token
    assertEquals(999, b[2][1][9]);
  }
}
