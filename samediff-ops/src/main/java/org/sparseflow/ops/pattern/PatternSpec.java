package org.sparseflow.ops.pattern;

import java.util.Objects;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.nd4j.shade.jackson.annotation.JsonIgnore;
import org.sparseflow.ops.pattern.MaskPattern.Kind;

/**
 * Jackson/ND4J view of a {@link MaskPattern} (the one, framework-free definition of a sparsity
 * pattern and its validation): a mutable bean for configuration files plus the mask factories.
 *
 * <p>String form (see {@link #parse(String)} / {@link #toString()}): {@code unstructured}, {@code
 * block8}, {@code block16}, {@code block32}, {@code block64}, {@code n:m} (e.g. {@code 2:4}).
 * Jackson friendly: public no-arg constructor, getters and setters.
 */
public class PatternSpec {

  private Kind kind = Kind.UNSTRUCTURED;
  private int blockSize;
  private int n;
  private int m;

  /** Unstructured pattern (Jackson). */
  public PatternSpec() {}

  private PatternSpec(Kind kind, int blockSize, int n, int m) {
    this.kind = kind;
    this.blockSize = blockSize;
    this.n = n;
    this.m = m;
    validate();
  }

  public static PatternSpec unstructured() {
    return new PatternSpec(Kind.UNSTRUCTURED, 0, 0, 0);
  }

  public static PatternSpec block(int blockSize) {
    return new PatternSpec(Kind.BLOCK, blockSize, 0, 0);
  }

  public static PatternSpec nm(int n, int m) {
    return new PatternSpec(Kind.NM, 0, n, m);
  }

  /** The bean form of a pattern. */
  public static PatternSpec of(MaskPattern p) {
    switch (p.kind()) {
      case BLOCK:
        return block(p.blockSize());
      case NM:
        return nm(p.n(), p.m());
      default:
        return unstructured();
    }
  }

  /**
   * Parses {@code unstructured}, {@code block<b>} (b in 8/16/32/64) or {@code n:m};
   * case-insensitive. Same rules as {@link MaskPattern#parse(String)}.
   *
   * @throws IllegalArgumentException naming the value and the allowed forms
   */
  public static PatternSpec parse(String text) {
    return of(MaskPattern.parse(text));
  }

  /** Checks the fields; throws IllegalArgumentException naming the offending field. */
  public void validate() {
    MaskPattern.check(kind, blockSize, n, m);
  }

  /** The framework-free value of this bean (validated). */
  public MaskPattern pattern() {
    return MaskPattern.of(kind, blockSize, n, m);
  }

  /** Inverse of {@link #parse(String)}. */
  @Override
  public String toString() {
    return MaskPattern.format(kind, blockSize, n, m);
  }

  // ---------------------------------------------------------------- mask factories

  /**
   * A mask with {@code round(density * units)} (at least 1) units kept uniformly at random (N:M: n
   * random per group).
   */
  public SparseMask random(long rows, long cols, double density, long seed) {
    validate();
    MaskBuilders.checkDensity(density);
    switch (kind) {
      case BLOCK:
        return BlockMask.random(rows, cols, blockSize, density, seed);
      case NM:
        return NMMask.random(rows, cols, n, m, seed);
      default:
        return ElementMask.random(rows, cols, density, seed);
    }
  }

  /**
   * Top-k by score: elements by score; blocks by the L2 norm of the scores inside the block; N:M
   * the n highest scores of every group of m. Ties are broken by the lower linear index. For N:M
   * the density is fixed by n/m and {@code density} is only range-checked.
   */
  public SparseMask fromScores(INDArray scores, double density) {
    validate();
    MaskBuilders.checkDensity(density);
    MaskBuilders.checkMatrix("scores", scores);
    switch (kind) {
      case BLOCK:
        return BlockMask.fromScores(scores, blockSize, density);
      case NM:
        return NMMask.fromScores(scores, n, m);
      default:
        return ElementMask.fromScores(scores, density);
    }
  }

  /** {@link #fromScores} with scores = |w|. */
  public SparseMask fromMagnitude(INDArray w, double density) {
    MaskBuilders.checkMatrix("w", w);
    return fromScores(Transforms.abs(w, true), density);
  }

  /**
   * Reads a dense 0/1 mask (nonzero = kept) and checks that it has this pattern's structure (block
   * masks: every block all-kept or all-pruned; N:M: exactly n kept per group).
   */
  public SparseMask fromDense(INDArray mask01) {
    validate();
    MaskBuilders.checkMatrix("mask", mask01);
    switch (kind) {
      case BLOCK:
        return BlockMask.fromDense(mask01, blockSize);
      case NM:
        return NMMask.fromDense(mask01, n, m);
      default:
        return ElementMask.fromDense(mask01);
    }
  }

  /** Throws IllegalArgumentException if a [rows, cols] matrix cannot carry this pattern. */
  public void checkShape(long rows, long cols) {
    validate();
    if (kind == Kind.BLOCK) {
      MaskBuilders.checkDivides("rows", rows, blockSize);
      MaskBuilders.checkDivides("cols", cols, blockSize);
    } else if (kind == Kind.NM) {
      MaskBuilders.checkDivides("rows", rows, m);
    }
  }

  // ---------------------------------------------------------------- bean

  public Kind getKind() {
    return kind;
  }

  public void setKind(Kind kind) {
    this.kind = kind;
  }

  public int getBlockSize() {
    return blockSize;
  }

  public void setBlockSize(int blockSize) {
    this.blockSize = blockSize;
  }

  public int getN() {
    return n;
  }

  public void setN(int n) {
    this.n = n;
  }

  public int getM() {
    return m;
  }

  public void setM(int m) {
    this.m = m;
  }

  /** Fraction kept by an N:M pattern (n/m); NaN for other kinds, whose density is free. */
  @JsonIgnore
  public double fixedDensity() {
    return kind == Kind.NM ? (double) n / m : Double.NaN;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof PatternSpec)) {
      return false;
    }
    PatternSpec p = (PatternSpec) o;
    return kind == p.kind && blockSize == p.blockSize && n == p.n && m == p.m;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, blockSize, n, m);
  }
}
