package org.sparseflow.ops.pattern;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * Immutable 0/1 mask over a weight matrix W [rows = nIn, cols = nOut] (y = x W). Subclasses: {@link
 * ElementMask} (unstructured), {@link BlockMask} (b x b blocks) and {@link NMMask} (N:M groups).
 * Weights are stored dense with exact zeros at pruned positions; {@link #applyInPlace} writes those
 * zeros.
 */
public abstract class SparseMask {

  static final ObjectMapper MAPPER = new ObjectMapper();

  protected final long rows;
  protected final long cols;

  protected SparseMask(long rows, long cols) {
    MaskBuilders.checkDims(rows, cols);
    this.rows = rows;
    this.cols = cols;
  }

  public long rows() {
    return rows;
  }

  public long cols() {
    return cols;
  }

  /** Number of kept elements. */
  public abstract long nnz();

  /** nnz / (rows * cols). */
  public double density() {
    return (double) nnz() / ((double) rows * cols);
  }

  public abstract PatternSpec spec();

  public abstract boolean isKept(long r, long c);

  /** Row-major 0/1 flags (index r * cols + c). */
  protected abstract boolean[] keptFlags();

  /** Dense 0/1 matrix [rows, cols] in the given floating type ('c' order). */
  public INDArray toDense(DataType dataType) {
    boolean[] flags = keptFlags();
    if (dataType == DataType.DOUBLE) {
      double[] d = new double[flags.length];
      for (int i = 0; i < flags.length; i++) {
        d[i] = flags[i] ? 1.0 : 0.0;
      }
      return Nd4j.create(d, new long[] {rows, cols}, DataType.DOUBLE);
    }
    float[] f = new float[flags.length];
    for (int i = 0; i < flags.length; i++) {
      f[i] = flags[i] ? 1f : 0f;
    }
    INDArray out = Nd4j.create(f, new long[] {rows, cols}, DataType.FLOAT);
    return dataType == DataType.FLOAT ? out : out.castTo(dataType);
  }

  private transient volatile INDArray cachedFloat;
  private transient volatile INDArray cachedDouble;

  /**
   * Cached dense 0/1 matrix for kernels (FLOAT or DOUBLE, other types are converted each call). The
   * result is shared: callers must not modify it.
   */
  public INDArray cachedDense(DataType dataType) {
    if (dataType == DataType.FLOAT) {
      INDArray c = cachedFloat;
      if (c == null) {
        c = toDense(DataType.FLOAT);
        cachedFloat = c;
      }
      return c;
    }
    if (dataType == DataType.DOUBLE) {
      INDArray c = cachedDouble;
      if (c == null) {
        c = toDense(DataType.DOUBLE);
        cachedDouble = c;
      }
      return c;
    }
    return toDense(dataType);
  }

  /** Zeros the pruned entries of w (shape [rows, cols]) in place and returns w. */
  public INDArray applyInPlace(INDArray w) {
    checkShape("w", w);
    return w.muli(cachedDense(w.dataType()));
  }

  /** Throws IllegalArgumentException unless a has shape [rows, cols]. */
  public void checkShape(String name, INDArray a) {
    MaskBuilders.checkMatrix(name, a);
    if (a.size(0) != rows || a.size(1) != cols) {
      throw new IllegalArgumentException(
          name
              + " has shape "
              + Arrays.toString(a.shape())
              + "; the mask requires ["
              + rows
              + ", "
              + cols
              + "]");
    }
  }

  // ---------------------------------------------------------------- JSON

  /**
   * JSON form: {"pattern": spec string, "rows", "cols", kind-specific fields, "bits": base64 of
   * packed flags}.
   */
  public String toJson() {
    ObjectNode node = MAPPER.createObjectNode();
    node.put("pattern", spec().toString());
    node.put("rows", rows);
    node.put("cols", cols);
    writeJsonFields(node);
    try {
      return MAPPER.writeValueAsString(node);
    } catch (Exception e) {
      throw new IllegalStateException("cannot serialize mask", e);
    }
  }

  protected abstract void writeJsonFields(ObjectNode node);

  /** Inverse of {@link #toJson()}. */
  public static SparseMask fromJson(String json) {
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
    } catch (Exception e) {
      throw new IllegalArgumentException("json is not valid JSON: " + e.getMessage(), e);
    }
    if (node == null
        || !node.has("pattern")
        || !node.has("rows")
        || !node.has("cols")
        || !node.has("bits")) {
      throw new IllegalArgumentException(
          "json lacks one of the fields pattern, rows, cols, bits: " + abbreviate(json));
    }
    PatternSpec spec = PatternSpec.parse(node.get("pattern").asText());
    long rows = node.get("rows").asLong();
    long cols = node.get("cols").asLong();
    String bits = node.get("bits").asText();
    switch (spec.getKind()) {
      case BLOCK:
        return BlockMask.fromJsonFields(rows, cols, spec.getBlockSize(), bits);
      case NM:
        return NMMask.fromJsonFields(rows, cols, spec.getN(), spec.getM(), bits);
      default:
        return ElementMask.fromJsonFields(rows, cols, bits);
    }
  }

  private static String abbreviate(String s) {
    return s == null ? "null" : s.length() > 120 ? s.substring(0, 120) + "..." : s;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (o == null || o.getClass() != getClass()) {
      return false;
    }
    SparseMask m = (SparseMask) o;
    return rows == m.rows
        && cols == m.cols
        && spec().equals(m.spec())
        && Arrays.equals(keptFlags(), m.keptFlags());
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(keptFlags()) * 31 + spec().hashCode();
  }

  @Override
  public String toString() {
    return getClass().getSimpleName()
        + "["
        + spec()
        + ", "
        + rows
        + "x"
        + cols
        + ", density="
        + String.format("%.4f", density())
        + "]";
  }
}
