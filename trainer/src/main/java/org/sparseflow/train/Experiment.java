package org.sparseflow.train;

import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.CharTokenizer;
import org.sparseflow.examples.data.Corpus;
import org.sparseflow.examples.data.TokenSplit;

/** A resolved training setup: config, data, tokenizer, model and sparsity driver. */
public final class Experiment {

  private final TrainConfig config;
  private final Corpus corpus;
  private final CharTokenizer tokenizer;
  private final TokenSplit split;
  private final TrainableModel model;
  private final SparsityDriver driver;

  public Experiment(
      TrainConfig config,
      Corpus corpus,
      CharTokenizer tokenizer,
      TrainableModel model,
      SparsityDriver driver) {
    this.config = config;
    this.corpus = corpus;
    this.tokenizer = tokenizer;
    this.split =
        TokenSplit.of(
            tokenizer.encode(corpus.text()),
            config.trainFraction,
            config.testFraction,
            config.contextLength);
    this.model = model;
    this.driver = driver;
  }

  public TrainConfig config() {
    return config;
  }

  public Corpus corpus() {
    return corpus;
  }

  public CharTokenizer tokenizer() {
    return tokenizer;
  }

  public TokenSplit split() {
    return split;
  }

  public TrainableModel model() {
    return model;
  }

  public SparsityDriver driver() {
    return driver;
  }

  public BatchSampler trainSampler() {
    return new BatchSampler(split.train(), config.batchSize, config.contextLength, config.seed);
  }

  public int[][][] validationBatches() {
    return BatchSampler.evaluationBatches(
        split.validation(), config.contextLength, config.batchSize, config.evalWindows);
  }

  /** Mean validation loss over the fixed validation windows. */
  public double validationLoss() {
    return meanLoss(validationBatches());
  }

  /**
   * Mean loss over fixed windows of the test part (as many as validation uses), or null when the
   * split has no test part.
   */
  public Double testLoss() {
    if (split.test().length == 0) {
      return null;
    }
    return meanLoss(
        BatchSampler.evaluationBatches(
            split.test(), config.contextLength, config.batchSize, config.evalWindows));
  }

  private double meanLoss(int[][][] batches) {
    double sum = 0;
    long n = 0;
    for (int[][] batch : batches) {
      sum += model.loss(batch) * batch.length;
      n += batch.length;
    }
    return sum / n;
  }
}
