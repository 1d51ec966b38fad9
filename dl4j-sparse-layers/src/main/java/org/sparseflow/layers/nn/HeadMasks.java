package org.sparseflow.layers.nn;

import java.util.Map;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Makes the 0/1 masks of one attention's projections respect head boundaries. Q = x Wq is split
 * into heads by columns of Wq; a head's scores are zero when no column of its slice is kept in both
 * Wq and Wk, and its output is zero when its slice of Wv's columns or Wo's rows is empty; then Wq
 * and Wk of that head get exactly zero gradient for the whole run. For every head this guarantees a
 * unit column (a block column for block patterns) kept in both Wq and Wk, and a kept unit in Wv's
 * head columns and in Wo's head rows. A missing unit is moved from the fullest other column of the
 * same mask (same row, so the density is unchanged), or added when no column has one to spare. N:M
 * masks need nothing: they keep n of every m inputs of every output column.
 */
public final class HeadMasks {
  private HeadMasks() {}

  /** The mask unit of a pattern: its block size, 1 for element masks, 0 for N:M (no change). */
  public static int unit(PatternSpec spec) {
    if (spec.getKind() == MaskPattern.Kind.BLOCK) {
      return spec.getBlockSize();
    }
    return spec.getKind() == MaskPattern.Kind.NM ? 0 : 1;
  }

  /**
   * Adjusts the masks in place. {@code q}, {@code k}, {@code v}: [in, heads * headDim] (views are
   * fine; null = dense); {@code oT}: the output projection's mask transposed, [out, heads *
   * headDim], or null.
   *
   * @return {added, moved} units
   */
  public static int[] adjust(
      INDArray q, INDArray k, INDArray v, INDArray oT, int heads, int headDim, int unit) {
    int[] r = {0, 0};
    if (unit <= 0 || headDim % unit != 0) {
      return r;
    }
    for (int head = 0; head < heads; head++) {
      int c0 = head * headDim / unit, c1 = (head + 1) * headDim / unit;
      if (q != null || k != null) {
        add(r, overlap(q, k, unit, c0, c1));
      }
      for (INDArray m : new INDArray[] {v, oT}) {
        if (m != null && units(m, unit, c0, c1) == 0) {
          add(r, ensure(m, unit, c0));
        }
      }
    }
    return r;
  }

  /**
   * Applies {@link #adjust} to the projection masks "Mq", "Mk", "Mv", "Mo" of a {@link
   * CausalSelfAttentionLayer} with sparse projections (Wo is [nOut, nOut]: its rows are the heads);
   * does nothing for other layers.
   *
   * @return {added, moved} units
   */
  public static int[] adjustAttentionLayer(Layer conf, Map<String, INDArray> params) {
    if (!(conf instanceof CausalSelfAttentionLayer c) || c.getProjectionPattern() == null) {
      return new int[] {0, 0};
    }
    INDArray mo = params.get("Mo");
    int heads = c.getNHeads();
    return adjust(
        params.get("Mq"),
        params.get("Mk"),
        params.get("Mv"),
        mo == null ? null : mo.transpose(),
        heads,
        (int) (c.getNOut() / heads),
        unit(PatternSpec.parse(c.getProjectionPattern())));
  }

  private static void add(int[] r, int[] d) {
    r[0] += d[0];
    r[1] += d[1];
  }

  /** Ensures a unit column in [c0, c1) kept in both q and k (either may be null = dense). */
  private static int[] overlap(INDArray q, INDArray k, int b, int c0, int c1) {
    int best = c0, bestScore = -1;
    for (int c = c0; c < c1; c++) {
      int nq = q == null ? 1 : units(q, b, c, c + 1), nk = k == null ? 1 : units(k, b, c, c + 1);
      if (nq > 0 && nk > 0) {
        return new int[] {0, 0};
      }
      if (nq + nk > bestScore) {
        bestScore = nq + nk;
        best = c;
      }
    }
    int[] r = {0, 0};
    for (INDArray m : new INDArray[] {q, k}) {
      if (m != null && units(m, b, best, best + 1) == 0) {
        add(r, ensure(m, b, best));
      }
    }
    return r;
  }

  /** Puts one kept unit into unit column {@code c}; returns {added, moved}. */
  private static int[] ensure(INDArray m, int b, int c) {
    int cols = (int) (m.size(1) / b), rows = (int) (m.size(0) / b);
    int donor = -1, most = 1;
    for (int j = 0; j < cols; j++) {
      int n = units(m, b, j, j + 1);
      if (j != c && n > most) {
        most = n;
        donor = j;
      }
    }
    if (donor < 0) {
      set(m, b, 0, c, 1.0);
      return new int[] {1, 0};
    }
    for (int r = 0; r < rows; r++) {
      if (kept(m, b, r, donor)) {
        set(m, b, r, donor, 0.0);
        set(m, b, r, c, 1.0);
        break;
      }
    }
    return new int[] {0, 1};
  }

  private static int units(INDArray m, int b, int c0, int c1) {
    int n = 0;
    for (int r = 0; r < m.size(0) / b; r++) {
      for (int c = c0; c < c1; c++) {
        n += kept(m, b, r, c) ? 1 : 0;
      }
    }
    return n;
  }

  private static boolean kept(INDArray m, int b, int r, int c) {
    return m.getDouble((long) r * b, (long) c * b) != 0.0;
  }

  private static void set(INDArray m, int b, int r, int c, double v) {
    m.get(
            NDArrayIndex.interval((long) r * b, (long) (r + 1) * b),
            NDArrayIndex.interval((long) c * b, (long) (c + 1) * b))
        .assign(v);
  }
}
