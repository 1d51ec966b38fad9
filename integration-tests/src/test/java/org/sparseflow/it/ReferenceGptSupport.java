package org.sparseflow.it;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.function.Supplier;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;

/**
 * Shared pieces of the reference-GPT tests: a corpus slice and the config switch via
 * -Dsparseflow.config.
 */
final class ReferenceGptSupport {
  static final int CORPUS_CHARS = 20_000;

  final CharTokenizer tokenizer;
  final int[] ids;

  ReferenceGptSupport() {
    String text = Corpus.bundled().text().substring(0, CORPUS_CHARS);
    tokenizer = CharTokenizer.fit(text);
    ids = tokenizer.encode(text);
  }

  BatchSampler sampler(int batch, int context, long seed) {
    return new BatchSampler(ids, batch, context, seed);
  }

  /**
   * Runs {@code body} with -Dsparseflow.config pointing at a test resource (the configuration
   * switch).
   */
  static <T> T withConfigSwitch(String resource, Supplier<T> body) {
    String old = System.getProperty("sparseflow.config");
    try {
      Path p = Path.of(ReferenceGptSupport.class.getResource(resource).toURI());
      System.setProperty("sparseflow.config", p.toString());
      return body.get();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    } finally {
      if (old == null) {
        System.clearProperty("sparseflow.config");
      } else {
        System.setProperty("sparseflow.config", old);
      }
    }
  }
}
