package org.sparseflow.ops.pattern;

import java.util.SplittableRandom;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/** Unstructured mask: every element kept or pruned independently. */
public class ElementMask extends SparseMask {

  /** Packed row-major flags, bit (r * cols + c). */
  protected final long[] words;

  protected final long nnz;

  protected ElementMask(long rows, long cols, boolean[] flags) {
    super(rows, cols);
    if (flags.length != rows * cols) {
      throw new IllegalArgumentException(
          "flags has " + flags.length + " entries; expected rows * cols = " + rows * cols);
    }
    this.words = MaskBuilders.pack(flags);
    long count = 0;
    for (boolean f : flags) {
      if (f) {
        count++;
      }
    }
    this.nnz = count;
  }

  /** Builds a mask from row-major flags (copied). */
  public static ElementMask of(long rows, long cols, boolean[] rowMajorFlags) {
    return new ElementMask(rows, cols, rowMajorFlags.clone());
  }

  static ElementMask random(long rows, long cols, double density, long seed) {
    MaskBuilders.checkDims(rows, cols);
    int total = (int) (rows * cols);
    return new ElementMask(
        rows,
        cols,
        MaskBuilders.randomK(
            total, MaskBuilders.keptCount(density, total), new SplittableRandom(seed)));
  }

  static ElementMask fromScores(INDArray scores, double density) {
    double[] s = MaskBuilders.readRowMajor("scores", scores);
    return new ElementMask(
        scores.size(0),
        scores.size(1),
        MaskBuilders.topK(s, MaskBuilders.keptCount(density, s.length)));
  }

  static ElementMask fromDense(INDArray mask01) {
    double[] v = MaskBuilders.readRowMajor("mask", mask01);
    boolean[] flags = new boolean[v.length];
    for (int i = 0; i < v.length; i++) {
      flags[i] = v[i] != 0.0;
    }
    return new ElementMask(mask01.size(0), mask01.size(1), flags);
  }

  static ElementMask fromJsonFields(long rows, long cols, String bits) {
    MaskBuilders.checkDims(rows, cols);
    int total = (int) (rows * cols);
    return new ElementMask(rows, cols, unpack(MaskBuilders.fromBase64(bits, total), total));
  }

  static boolean[] unpack(long[] words, int total) {
    boolean[] flags = new boolean[total];
    for (int i = 0; i < total; i++) {
      flags[i] = (words[i >>> 6] & (1L << (i & 63))) != 0;
    }
    return flags;
  }

  @Override
  public long nnz() {
    return nnz;
  }

  @Override
  public PatternSpec spec() {
    return PatternSpec.unstructured();
  }

  @Override
  public boolean isKept(long r, long c) {
    checkIndex(r, c);
    long i = r * cols + c;
    return (words[(int) (i >>> 6)] & (1L << (i & 63))) != 0;
  }

  protected void checkIndex(long r, long c) {
    if (r < 0 || r >= rows || c < 0 || c >= cols) {
      throw new IllegalArgumentException(
          "(r, c) = (" + r + ", " + c + ") is outside [0, " + rows + ") x [0, " + cols + ")");
    }
  }

  @Override
  protected boolean[] keptFlags() {
    return unpack(words, (int) (rows * cols));
  }

  @Override
  protected void writeJsonFields(ObjectNode node) {
    node.put("bits", MaskBuilders.toBase64(words, (int) (rows * cols)));
  }
}
