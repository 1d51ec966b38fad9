package org.sparseflow.ops.pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.sparseflow.ops.matmul.SparseLinear;

/** PatternSpec parsing/JSON and the IllegalArgumentException contract for bad input. */
class PatternSpecTest {

  @ParameterizedTest
  @ValueSource(
      strings = {"unstructured", "block8", "block16", "block32", "block64", "2:4", "1:8", "4:16"})
  void parseAndToStringAreInverse(String text) throws Exception {
    PatternSpec p = PatternSpec.parse(text);
    assertEquals(text, p.toString());
    assertEquals(p, PatternSpec.parse(p.toString()));
    ObjectMapper om = new ObjectMapper();
    PatternSpec back = om.readValue(om.writeValueAsString(p), PatternSpec.class);
    assertEquals(p, back);
  }

  private static void assertIae(Runnable r, String... fragments) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
    for (String f : fragments) {
      assertTrue(e.getMessage().contains(f), "message '" + e.getMessage() + "' lacks '" + f + "'");
    }
  }

  @Test
  void unknownPatternNamesArgumentValueAndAllowed() {
    assertIae(
        () -> PatternSpec.parse("diagonal"), "pattern", "diagonal", "allowed", "block16", "2:4");
    assertIae(() -> PatternSpec.parse("block12"), "blockSize = 12", "allowed", "8, 16, 32, 64");
    assertIae(() -> PatternSpec.parse("5:4"), "n = 5", "allowed");
    assertIae(() -> PatternSpec.parse(null), "pattern = null", "allowed");
  }

  @Test
  void densityOutsideRangeIsRejected() {
    for (double d : new double[] {0.0, -0.1, 1.5, Double.NaN}) {
      assertIae(() -> PatternSpec.block(8).random(16, 16, d, 1), "density = " + d, "(0, 1]");
      assertIae(
          () -> PatternSpec.unstructured().fromScores(Nd4j.rand(4, 4), d), "density", "(0, 1]");
    }
  }

  @Test
  void blockSizeMustDivideDimensions() {
    assertIae(() -> PatternSpec.block(8).random(30, 16, 0.5, 1), "rows = 30", "multiple of 8");
    assertIae(() -> PatternSpec.block(16).random(32, 40, 0.5, 1), "cols = 40", "multiple of 16");
    assertIae(() -> PatternSpec.nm(2, 4).random(6, 4, 0.5, 1), "rows = 6", "multiple of 4");
  }

  @Test
  void scoresWithNaNAreRejected() {
    INDArray s = Nd4j.rand(DataType.DOUBLE, 8, 8);
    s.putScalar(2, 3, Double.NaN);
    assertIae(() -> PatternSpec.unstructured().fromScores(s, 0.5), "scores", "NaN", "allowed");
  }

  @Test
  void sparseLinearRejectsBadShapesAndNaN() {
    SparseMask mask = PatternSpec.block(8).random(16, 24, 0.5, 1);
    INDArray w = Nd4j.rand(DataType.FLOAT, 16, 24);
    assertIae(
        () -> SparseLinear.forward(Nd4j.rand(DataType.FLOAT, 4, 15), w, null, mask),
        "x has shape [4, 15]",
        "[N, 16]");
    assertIae(
        () ->
            SparseLinear.forward(
                Nd4j.rand(DataType.FLOAT, 4, 16), Nd4j.rand(DataType.FLOAT, 16, 16), null, mask),
        "w has shape [16, 16]",
        "[16, 24]");
    assertIae(
        () ->
            SparseLinear.forward(
                Nd4j.rand(DataType.FLOAT, 4, 16), w, Nd4j.rand(DataType.FLOAT, 5), mask),
        "bias",
        "24");
    assertIae(
        () -> SparseLinear.forward(Nd4j.rand(DataType.DOUBLE, 4, 16), w, null, mask),
        "data type",
        "must match");
    assertIae(
        () -> SparseLinear.forward(Nd4j.rand(DataType.FLOAT, 4, 16), w, null, null), "mask = null");
    INDArray xNaN = Nd4j.rand(DataType.FLOAT, 4, 16);
    xNaN.putScalar(1, 1, Float.NaN);
    assertIae(() -> SparseLinear.forward(xNaN, w, null, mask), "x contains 1 NaN", "allowed");
    INDArray dy = Nd4j.rand(DataType.FLOAT, 4, 24);
    dy.putScalar(0, 0, Float.NaN);
    assertIae(
        () -> SparseLinear.backward(Nd4j.rand(DataType.FLOAT, 4, 16), w, mask, dy, false),
        "dy contains",
        "NaN");
    assertIae(
        () ->
            SparseLinear.backward(
                Nd4j.rand(DataType.FLOAT, 4, 16), w, mask, Nd4j.rand(DataType.FLOAT, 3, 24), false),
        "dy has shape [3, 24]",
        "[4, 24]");
  }

  @Test
  void malformedJsonIsRejected() {
    assertIae(() -> SparseMask.fromJson("{not json"), "json");
    assertIae(() -> SparseMask.fromJson("{\"pattern\":\"block8\"}"), "json lacks");
    assertIae(
        () ->
            SparseMask.fromJson("{\"pattern\":\"weird\",\"rows\":8,\"cols\":8,\"bits\":\"AA==\"}"),
        "pattern",
        "weird");
  }

  @Test
  void applyInPlaceZerosExactlyThePrunedEntries() {
    SparseMask mask = PatternSpec.nm(2, 4).random(8, 6, 0.5, 3);
    INDArray w = Nd4j.rand(DataType.FLOAT, 8, 6).addi(0.1);
    mask.applyInPlace(w);
    for (int r = 0; r < 8; r++) {
      for (int c = 0; c < 6; c++) {
        assertEquals(mask.isKept(r, c), w.getFloat(r, c) != 0f);
      }
    }
  }
}
