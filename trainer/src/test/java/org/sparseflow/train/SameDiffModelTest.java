package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;

class SameDiffModelTest {

  static final String TEXT =
      "Call me Ishmael. Some years ago - never mind how long precisely - having little or no money. "
          .repeat(8);

  @Test
  void trainingLossEqualsEvaluatedLossAndSaveLoadKeepsOutputs() throws Exception {
    CharTokenizer tok = CharTokenizer.fit(TEXT);
    int[][] w = new BatchSampler(tok.encode(TEXT), 3, 8, 1).windows(0);
    SameDiffModel m =
        new SameDiffModel(
            SameDiffGpt.build(new GptConfig(tok.vocabSize(), 1, 16, 2, 8, 3), 1e-2),
            tok.vocabSize(),
            8);
    double before = m.loss(w);
    // near-uniform predictions at init: the mean per-token loss is close to ln(V)
    assertEquals(Math.log(tok.vocabSize()), before, 0.3);
    double reported = m.fit(w); // loss of the batch before the update
    assertEquals(before, reported, 1e-4);
    assertTrue(m.loss(w) < before, "one step on the batch lowers its loss");

    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    m.save(buf);
    SameDiffModel back = SameDiffModel.load(buf.toByteArray(), tok.vocabSize(), 8);
    assertEquals(m.loss(w), back.loss(w), 1e-6);
    double[] p = back.nextTokenProbabilities(tok.encode("Call"));
    assertEquals(1.0, Arrays.stream(p).sum(), 1e-6);
    // a step after loading continues identically (optimizer state saved)
    assertEquals(m.fit(w), back.fit(w), 1e-5);
    assertEquals(m.loss(w), back.loss(w), 1e-5);
  }
}
