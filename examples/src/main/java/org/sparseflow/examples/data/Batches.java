package org.sparseflow.examples.data;

import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Turns token windows (int[batch][T + 1]) into ND4J arrays: inputs are tokens 0..T-1, targets
 * tokens 1..T. Several layouts are offered because DL4J and SameDiff models expect different ones.
 */
public final class Batches {

  private Batches() {}

  /**
   * Input token ids as floats, shape [batch, T] (DL4J EmbeddingSequenceLayer / SameDiff
   * placeholders).
   */
  public static INDArray inputIndices(int[][] windows, DataType type) {
    int b = windows.length, t = windows[0].length - 1;
    float[] buf = new float[b * t];
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        buf[i * t + j] = windows[i][j];
      }
    }
    return Nd4j.create(buf, new long[] {b, t}, 'c').castTo(type);
  }

  /** Target token ids (shifted by one), shape [batch, T]. */
  public static INDArray targetIndices(int[][] windows, DataType type) {
    int b = windows.length, t = windows[0].length - 1;
    float[] buf = new float[b * t];
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        buf[i * t + j] = windows[i][j + 1];
      }
    }
    return Nd4j.create(buf, new long[] {b, t}, 'c').castTo(type);
  }

  /** One-hot targets in DL4J's recurrent layout NCW: [batch, vocab, T]. */
  public static INDArray targetOneHotNcw(int[][] windows, int vocab, DataType type) {
    int b = windows.length, t = windows[0].length - 1;
    float[] buf = new float[b * vocab * t];
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        buf[(i * vocab + checked(windows[i][j + 1], vocab)) * t + j] = 1f;
      }
    }
    return Nd4j.create(buf, new long[] {b, vocab, t}, 'c').castTo(type);
  }

  /** One-hot targets in NWC layout: [batch, T, vocab]. */
  public static INDArray targetOneHotNwc(int[][] windows, int vocab, DataType type) {
    int b = windows.length, t = windows[0].length - 1;
    return targetOneHotRows(windows, vocab, type).reshape('c', b, t, vocab);
  }

  /**
   * One-hot targets flattened to rows: [batch * T, vocab] (row i*T + j is window i, position j).
   */
  public static INDArray targetOneHotRows(int[][] windows, int vocab, DataType type) {
    int b = windows.length, t = windows[0].length - 1;
    float[] buf = new float[b * t * vocab];
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < t; j++) {
        buf[(i * t + j) * vocab + checked(windows[i][j + 1], vocab)] = 1f;
      }
    }
    return Nd4j.create(buf, new long[] {(long) b * t, vocab}, 'c').castTo(type);
  }

  private static int checked(int id, int vocab) {
    if (id < 0 || id >= vocab) {
      throw new IllegalArgumentException(
          "token id: " + id + " is outside the vocabulary [0, " + vocab + ")");
    }
    return id;
  }

  /**
   * Token-id inputs [B, T] with one-hot NCW targets [B, V, T]: the usual DL4J ComputationGraph GPT
   * batch.
   */
  public static DataSet dataSet(int[][] windows, int vocab) {
    return new DataSet(
        inputIndices(windows, DataType.FLOAT), targetOneHotNcw(windows, vocab, DataType.FLOAT));
  }

  public static MultiDataSet multiDataSet(int[][] windows, int vocab) {
    return new MultiDataSet(
        inputIndices(windows, DataType.FLOAT), targetOneHotNcw(windows, vocab, DataType.FLOAT));
  }
}
