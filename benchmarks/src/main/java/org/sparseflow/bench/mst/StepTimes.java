package org.sparseflow.bench.mst;

import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.sparseflow.bench.CpuClock;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.data.TokenSplit;
import org.sparseflow.examples.gpt.GptConfig;

/**
 * What the {@code graph-step} runs share: a reference GPT (gpt-mini by default) on the bundled
 * corpus's training split, and the per-step wall, process-CPU and thread-CPU times of a run of
 * training steps.
 */
final class StepTimes {
  private StepTimes() {}

  /**
   * A reference GPT ({@code size}: gpt-mini or gpt-small, {@link GptConfig#named}) for the bundled
   * corpus's vocabulary, and batches of its training split.
   */
  record GptData(GptConfig gpt, BatchSampler sampler) {
    static GptData bundled(String size) {
      Corpus corpus = Corpus.bundled();
      CharTokenizer tok = CharTokenizer.fit(corpus.text());
      TokenSplit split =
          TokenSplit.of(
              tok.encode(corpus.text()), TokenSplit.DEFAULT_TRAIN_FRACTION, MstVariants.CONTEXT);
      GptConfig c = GptConfig.named(size, tok.vocabSize(), MstVariants.CONTEXT, MstVariants.SEED);
      BatchSampler sampler =
          new BatchSampler(split.train(), MstVariants.BATCH, c.context(), MstVariants.SEED);
      return new GptData(c, sampler);
    }
  }

  /**
   * Runs {@code steps} training steps: step s makes its batch with {@code batch} (not timed) and
   * trains on it with {@code fit} (timed). Returns {wall ms, process CPU ms, thread CPU ms} per
   * step.
   */
  static <B> double[][] measure(int steps, IntFunction<B> batch, Consumer<B> fit) {
    double[] ms = new double[steps];
    double[] cpu = new double[steps];
    double[] threadCpu = new double[steps];
    for (int s = 0; s < steps; s++) {
      B b = batch.apply(s);
      long t0 = System.nanoTime();
      long c0 = CpuClock.processNanos();
      long tc0 = CpuClock.threadNanos();
      fit.accept(b);
      ms[s] = (System.nanoTime() - t0) / 1e6;
      cpu[s] = (CpuClock.processNanos() - c0) / 1e6;
      threadCpu[s] = (CpuClock.threadNanos() - tc0) / 1e6;
    }
    return new double[][] {ms, cpu, threadCpu};
  }
}
