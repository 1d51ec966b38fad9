package org.sparseflow.train;

import java.io.IOException;
import java.io.OutputStream;

/**
 * A next-token model the {@link Trainer} can drive, independent of whether it is a DL4J network or
 * a SameDiff graph. Inputs are token windows int[batch][T + 1] (inputs 0..T-1, targets 1..T).
 */
public interface TrainableModel {

  /**
   * Short identifier of the implementation, stored in checkpoints: {@code dl4j} or {@code
   * samediff}.
   */
  String kind();

  int vocabSize();

  /**
   * One optimizer step; returns the mean per-token cross-entropy (nats) of the batch before the
   * update.
   */
  double fit(int[][] windows);

  /** Mean per-token cross-entropy (nats) of the windows, no update. */
  double loss(int[][] windows);

  /** Probabilities of the next token after {@code context} (length 1..context length). */
  double[] nextTokenProbabilities(int[] context);

  long parameterCount();

  /** Writes the model with its optimizer state, so that training can continue exactly. */
  void save(OutputStream out) throws IOException;

  /** The underlying DL4J {@code Model} or {@code SameDiff}. */
  Object unwrap();
}
