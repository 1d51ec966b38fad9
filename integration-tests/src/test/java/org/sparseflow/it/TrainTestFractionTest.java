package org.sparseflow.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.sparseflow.it.CliSupport.cli;
import static org.sparseflow.it.CliSupport.tinyTrain;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code train --test-fraction}: a test part that validation does not read, reported at the end.
 */
class TrainTestFractionTest {

  @TempDir Path tmp;

  private static final Pattern DONE =
      Pattern.compile("val loss ([0-9.]+)(, test loss ([0-9.]+))?, density");

  private Matcher train(Path corpus, String name, String... extra) {
    List<String> args =
        new ArrayList<>(List.of(tinyTrain(corpus, "char-bigram", 4, tmp.resolve(name))));
    args.addAll(List.of(extra));
    CliSupport.Run r = cli(args.toArray(new String[0]));
    assertEquals(0, r.code(), "exit code; stderr: " + r.err());
    Matcher m = DONE.matcher(r.out());
    assertTrue(m.find(), "final line in: " + r.out());
    return m;
  }

  @Test
  void testPartIsLeftOutOfValidationAndReportedOnce() throws Exception {
    Path corpus = CliSupport.tinyCorpus(tmp);
    Matcher plain = train(corpus, "plain");
    assertNull(plain.group(3), "no test part by default");
    Matcher split = train(corpus, "split", "--test-fraction", "0.05");
    assertNotNull(split.group(3), "test loss reported");
    // same seed and training data, but validation now covers only the held-out tail before the
    // test part, so its loss differs from the run that validates on the whole tail
    assertNotEquals(plain.group(1), split.group(1));
    String summary = Files.readString(tmp.resolve("split/summary.json"));
    assertTrue(summary.contains("\"final_test_loss\""), summary);
    assertFalse(
        Files.readString(tmp.resolve("plain/summary.json")).contains("\"final_test_loss\""));
  }
}
