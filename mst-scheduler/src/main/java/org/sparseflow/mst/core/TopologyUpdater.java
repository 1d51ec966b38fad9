package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * One dynamic-sparse-training step for one layer: prune the smallest-magnitude active units, regrow
 * inactive units by |dense gradient| (RigL), at random (SET) or mixed, moving the layer towards its
 * target sparsity.
 *
 * <p>Counts follow the MST authors' scheduler (hupihe/Mixed-Sparsity-Training, DST/scheduler.py),
 * with N the number of units, n_on the active ones, S = 1 - n_on/N and S* the target:
 *
 * <pre>
 *   n_prune = max(int(n_on·f), int((S* − S)·N))      (int truncates toward zero, as Python's int())
 *   n_grow  = n_prune − int((S* − S)·N)
 * </pre>
 *
 * so a rising target prunes extra units in one shot and a falling target (restoration) grows |ΔS|·N
 * more than it prunes. Grow candidates are all units that are not kept after pruning (a just-pruned
 * unit may come back and then keeps its weight, as in RigL); units that were inactive and become
 * active are reported in {@link Result#newlyActiveElements} so the caller zeroes their weights and
 * optimizer state. Blocks are scored by the L2 norm of their weights / gradients. N:M keeps exactly
 * n per group: the n_on·f weakest weights are dropped and each group regrows as many as it lost.
 */
public final class TopologyUpdater {

  private TopologyUpdater() {}

  /** Outcome of one update. */
  public static final class Result {
    public final LayerMask mask;

    /** Units that were active and are not any more. */
    public final long pruned;

    /** Units that were inactive and are active now. */
    public final long grown;

    /**
     * Row-major element indices that became active (their weights must be zero, optimizer state
     * reset).
     */
    public final int[] newlyActiveElements;

    /** Row-major element indices that became inactive. */
    public final int[] newlyInactiveElements;

    Result(LayerMask mask, long pruned, long grown, int[] on, int[] off) {
      this.mask = mask;
      this.pruned = pruned;
      this.grown = grown;
      this.newlyActiveElements = on;
      this.newlyInactiveElements = off;
    }
  }

  /**
   * @param mask current topology
   * @param weights current weights, row-major [rows * cols]
   * @param denseGrad dense gradient, row-major (may be null only for {@link GrowMode#RANDOM} /
   *     NONE)
   * @param targetSparsity S* for this layer, in [0, 1)
   * @param dropFraction f in [0, 1]
   * @param growMode regrowth criterion
   * @param gradRandomRatio r for MIXED (r/(r+1) by gradient)
   * @param rng seeded RNG (advanced by random choices)
   */
  public static Result update(
      LayerMask mask,
      float[] weights,
      float[] denseGrad,
      double targetSparsity,
      double dropFraction,
      GrowMode growMode,
      double gradRandomRatio,
      SplitMix64 rng) {
    int len = mask.rows() * mask.cols();
    checkArgs(
        mask,
        "weights",
        weights == null ? -1 : weights.length,
        len + " values (row-major " + mask.rows() + "x" + mask.cols() + ")",
        "denseGrad",
        denseGrad == null ? -1 : denseGrad.length,
        len + " values: grow mode " + growMode + " needs the dense gradient",
        len,
        targetSparsity,
        dropFraction,
        growMode,
        gradRandomRatio);
    if (mask.pattern().kind() == MaskPattern.Kind.NM) {
      return updateNm(mask, weights, denseGrad, dropFraction, growMode, gradRandomRatio, rng);
    }
    return byScores(
        mask,
        unitScores(mask, weights),
        denseGrad == null ? null : unitScores(mask, denseGrad),
        targetSparsity,
        dropFraction,
        growMode,
        gradRandomRatio,
        rng);
  }

  /**
   * The same update from scores per mask unit (block or element) instead of dense arrays, for
   * callers that hold no dense weight or gradient (packed storage): {@code weightScores} ranks the
   * active units for pruning (the L2 norm of a block's weights, as {@link #update} computes it; the
   * inactive units' entries are not read), {@code gradScores} ranks the inactive units for
   * gradient-based growth (the L2 norm of the dense gradient per unit; may be null for RANDOM /
   * NONE). Gives the same result as {@link #update} when the scores are those it would compute. N:M
   * patterns choose within each group and need {@link #update}.
   */
  public static Result updateFromScores(
      LayerMask mask,
      double[] weightScores,
      double[] gradScores,
      double targetSparsity,
      double dropFraction,
      GrowMode growMode,
      double gradRandomRatio,
      SplitMix64 rng) {
    if (mask.pattern().kind() == MaskPattern.Kind.NM) {
      throw Args.bad(
          "pattern of " + mask.name(),
          mask.pattern(),
          "a block or element pattern for unit scores");
    }
    int units = mask.unitCount();
    checkArgs(
        mask,
        "weightScores",
        weightScores == null ? -1 : weightScores.length,
        units + " values (one per mask unit)",
        "gradScores",
        gradScores == null ? -1 : gradScores.length,
        units + " values: grow mode " + growMode + " needs the gradient scores",
        units,
        targetSparsity,
        dropFraction,
        growMode,
        gradRandomRatio);
    return byScores(
        mask,
        weightScores,
        gradScores,
        targetSparsity,
        dropFraction,
        growMode,
        gradRandomRatio,
        rng);
  }

  /**
   * The checks of both updates: the weight input has {@code len} entries (-1: missing), the
   * gradient input too when the grow mode ranks by gradient, and the scalar arguments are in range.
   */
  private static void checkArgs(
      LayerMask mask,
      String weightName,
      int weightLength,
      String weightAllowed,
      String gradName,
      int gradLength,
      String gradAllowed,
      int len,
      double targetSparsity,
      double dropFraction,
      GrowMode growMode,
      double gradRandomRatio) {
    Args.sparsity("targetSparsity of " + mask.name(), targetSparsity);
    Args.unit("dropFraction", dropFraction);
    if (weightLength != len) {
      throw Args.bad(
          weightName + " of " + mask.name(),
          weightLength < 0 ? null : weightLength + " values",
          weightAllowed);
    }
    boolean needGrad = growMode == GrowMode.GRADIENT || growMode == GrowMode.MIXED;
    if (needGrad && gradLength != len) {
      throw Args.bad(
          gradName + " of " + mask.name(),
          gradLength < 0 ? null : gradLength + " values",
          gradAllowed);
    }
    if (!(gradRandomRatio >= 0)) {
      throw Args.bad("gradRandomRatio", gradRandomRatio, "a number >= 0");
    }
  }

  private static Result byScores(
      LayerMask mask,
      double[] wScore,
      double[] gScore,
      double targetSparsity,
      double dropFraction,
      GrowMode growMode,
      double gradRandomRatio,
      SplitMix64 rng) {
    int units = mask.unitCount();
    int nOn = mask.activeUnits();
    double s = 1.0 - (double) nOn / units;
    double x = (targetSparsity - s) * units;
    // truncate toward zero like Python's int(), but do not lose a unit to rounding (0.9-0.8 =
    // 0.0999..)
    long diff = (long) (x + Math.copySign(1e-9, x));
    long nPrune = Math.max((long) (nOn * dropFraction), diff);
    nPrune = Math.max(0, Math.min(nOn, nPrune));
    long nGrow = growMode == GrowMode.NONE ? 0 : nPrune - diff;
    long keep = nOn - nPrune;
    nGrow = Math.max(0, Math.min(units - keep, nGrow));

    // keep the top (n_on - n_prune) active units by magnitude
    List<Integer> act = new ArrayList<>(nOn);
    BitSet old = mask.activeBits();
    for (int u = old.nextSetBit(0); u >= 0; u = old.nextSetBit(u + 1)) {
      act.add(u);
    }
    act.sort(byScoreDesc(wScore));
    BitSet next = new BitSet(units);
    for (int i = 0; i < keep; i++) {
      next.set(act.get(i));
    }
    // grow among the rest
    int[] cand = new int[units - (int) keep];
    int nc = 0;
    for (int u = 0; u < units; u++) {
      if (!next.get(u)) {
        cand[nc++] = u;
      }
    }
    long nGrad;
    switch (growMode) {
      case GRADIENT:
        nGrad = nGrow;
        break;
      case MIXED:
        nGrad = (long) (nGrow * gradRandomRatio / (gradRandomRatio + 1));
        break;
      default:
        nGrad = 0;
    }
    if (nGrad > 0) {
      Integer[] boxed = new Integer[nc];
      for (int i = 0; i < nc; i++) {
        boxed[i] = cand[i];
      }
      Arrays.sort(boxed, byScoreDesc(gScore));
      for (int i = 0; i < nGrad; i++) {
        next.set(boxed[i]);
      }
      nc = 0;
      for (int i = (int) nGrad; i < boxed.length; i++) {
        cand[nc++] = boxed[i];
      }
      // random choice below must not depend on gradient order: restore index order
      Arrays.sort(cand, 0, nc);
    }
    long nRand = nGrow - nGrad;
    if (nRand > 0) {
      rng.shuffleFirst(cand, nc, (int) nRand);
      for (int i = 0; i < nRand; i++) {
        next.set(cand[i]);
      }
    }
    return finish(mask, old, next);
  }

  private static Result updateNm(
      LayerMask mask, float[] w, float[] g, double f, GrowMode mode, double ratio, SplitMix64 rng) {
    int rows = mask.rows();
    int cols = mask.cols();
    int m = mask.pattern().m();
    BitSet old = mask.activeBits();
    int nOn = old.cardinality();
    int nPrune = mode == GrowMode.NONE ? 0 : (int) (nOn * f);
    List<Integer> act = new ArrayList<>(nOn);
    for (int u = old.nextSetBit(0); u >= 0; u = old.nextSetBit(u + 1)) {
      act.add(u);
    }
    double[] absW = new double[w.length];
    for (int i = 0; i < w.length; i++) {
      absW[i] = Math.abs(w[i]);
    }
    act.sort(byScoreDesc(absW).reversed());
    BitSet next = (BitSet) old.clone();
    for (int i = 0; i < nPrune; i++) {
      next.clear(act.get(i));
    }
    double p = ratio / (ratio + 1);
    for (int c = 0; c < cols; c++) {
      for (int g0 = 0; g0 < rows; g0 += m) {
        int lost = 0;
        List<Integer> cand = new ArrayList<>(m);
        for (int r = g0; r < g0 + m; r++) {
          int e = r * cols + c;
          if (old.get(e) && !next.get(e)) {
            lost++;
          }
          if (!next.get(e)) {
            cand.add(e);
          }
        }
        for (int k = 0; k < lost; k++) {
          boolean byGrad =
              mode == GrowMode.GRADIENT || (mode == GrowMode.MIXED && rng.nextDouble() < p);
          int pick;
          if (byGrad) {
            pick = 0;
            for (int i = 1; i < cand.size(); i++) {
              if (Math.abs(g[cand.get(i)]) > Math.abs(g[cand.get(pick)])) {
                pick = i;
              }
            }
          } else {
            pick = rng.nextInt(cand.size());
          }
          next.set(cand.remove(pick));
        }
      }
    }
    return finish(mask, old, next);
  }

  private static Result finish(LayerMask mask, BitSet old, BitSet next) {
    BitSet on = (BitSet) next.clone();
    on.andNot(old);
    BitSet off = (BitSet) old.clone();
    off.andNot(next);
    LayerMask nm = new LayerMask(mask.name(), mask.rows(), mask.cols(), mask.pattern(), next);
    return new Result(
        nm, off.cardinality(), on.cardinality(), elementsOf(mask, on), elementsOf(mask, off));
  }

  private static int[] elementsOf(LayerMask mask, BitSet units) {
    if (mask.pattern().kind() != MaskPattern.Kind.BLOCK) {
      return units.stream().toArray();
    }
    int b = mask.pattern().blockSize();
    int bc = mask.cols() / b;
    int[] out = new int[units.cardinality() * b * b];
    int k = 0;
    for (int u = units.nextSetBit(0); u >= 0; u = units.nextSetBit(u + 1)) {
      int r0 = (u / bc) * b;
      int c0 = (u % bc) * b;
      for (int r = r0; r < r0 + b; r++) {
        for (int c = c0; c < c0 + b; c++) {
          out[k++] = r * mask.cols() + c;
        }
      }
    }
    Arrays.sort(out);
    return out;
  }

  /** |x| per element, or the L2 norm per block. */
  static double[] unitScores(LayerMask mask, float[] x) {
    if (mask.pattern().kind() != MaskPattern.Kind.BLOCK) {
      double[] s = new double[x.length];
      for (int i = 0; i < x.length; i++) {
        s[i] = Math.abs(x[i]);
      }
      return s;
    }
    double[] s = new double[mask.unitCount()];
    int cols = mask.cols();
    for (int r = 0; r < mask.rows(); r++) {
      for (int c = 0; c < cols; c++) {
        double v = x[r * cols + c];
        s[mask.unitOf(r, c)] += v * v;
      }
    }
    for (int i = 0; i < s.length; i++) {
      s[i] = Math.sqrt(s[i]);
    }
    return s;
  }

  /** Descending score, ties broken by ascending index (deterministic). */
  private static Comparator<Integer> byScoreDesc(double[] score) {
    return (a, b) -> {
      int c = Double.compare(score[b], score[a]);
      return c != 0 ? c : Integer.compare(a, b);
    };
  }
}
