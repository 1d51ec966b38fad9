package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/** MST configs, the layers' pattern bean and the core share one pattern vocabulary. */
class PatternVocabularyTest {

  private static Optional<String> mstError(String pattern) {
    MstConfig c = MstConfig.preset("mst");
    c.setPattern(pattern);
    try {
      c.validate();
      return Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(e.getMessage());
    }
  }

  private static Optional<String> layerError(String pattern) {
    try {
      PatternSpec.parse(pattern);
      return Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(e.getMessage());
    }
  }

  @Provide
  Arbitrary<String> patterns() {
    Arbitrary<String> blocks = Arbitraries.integers().between(-2, 130).map(b -> "block" + b);
    Arbitrary<String> nms =
        Arbitraries.integers().between(-1, 70).tuple2().map(t -> t.get1() + ":" + t.get2());
    Arbitrary<String> words =
        Arbitraries.of("unstructured", "ELEMENT", " Block16 ", "diagonal", "block", "2:", ":4", "");
    return Arbitraries.oneOf(blocks, nms, words);
  }

  @Property(tries = 300)
  void mstConfigAcceptsExactlyWhatTheLayersAccept(@ForAll("patterns") String pattern) {
    Optional<String> mst = mstError(pattern);
    Optional<String> layers = layerError(pattern);
    assertEquals(
        layers.isPresent(), mst.isPresent(), pattern + ": mst " + mst + ", layers " + layers);
    if (layers.isEmpty()) {
      assertEquals(PatternSpec.parse(pattern).toString(), MaskPattern.parse(pattern).toString());
      assertEquals(MaskPattern.parse(pattern), PatternSpec.parse(pattern).pattern());
    }
  }

  @Test
  void blockSizesTheKernelsLackAreRejectedByMstConfigsWithAClearMessage() {
    for (String bad : new String[] {"block4", "block12", "block128", "1:1", "2:128"}) {
      String msg = mstError(bad).orElseThrow(() -> new AssertionError(bad + " was accepted"));
      assertTrue(msg.contains(bad) && msg.contains("allowed"), msg);
    }
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> MaskPattern.block(12));
    assertTrue(e.getMessage().contains("blockSize = 12") && e.getMessage().contains("8, 16"));
  }

  @Test
  void theMstSectionOfASparsityConfigRejectsPatternsTheLayersReject() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                MstConfig.fromSparsityConfigSection(
                    SparsityConfig.fromYaml("pattern: block16\nmst:\n  pattern: block4\n").getMst(),
                    "mst"));
    assertTrue(e.getMessage().contains("block4"), e.getMessage());
  }
}
