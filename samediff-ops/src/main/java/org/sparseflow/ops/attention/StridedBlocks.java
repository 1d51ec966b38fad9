package org.sparseflow.ops.attention;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.sparseflow.ops.vector.ExactVectorMath;

/**
 * The strided extra keys (Child et al. 2019, arXiv 1904.10509) of one query block at a time, called
 * from the Java tile loops of {@link AttentionForwardKernel} and {@link AttentionBackwardKernel}
 * (fp32, Vector API, block a whole number of vectors): for shift {@code m s} the keys {@code i - m
 * s} of the block's b queries are b consecutive rows, so the pairs of one shift read the head's K
 * and V in order while the block's own rows stay in L1, the exponentials run as whole vectors over
 * the block's rows, and the results join the tiles' row statistics, output and gradients directly.
 * This replaced head-wide passes ({@link StridedVectorKernel}, still used when the tiles run as
 * native GEMMs) that kept the strided scores in a {@code [rows, T / s]} double array between three
 * phases and read and wrote every row of the head in native memory once more. Which pairs are
 * extras comes from {@link BlockLayout#strideExtraBits}. Sums run in a fixed order, so results
 * depend neither on the thread count nor on the JIT.
 */
final class StridedBlocks {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();

  private StridedBlocks() {}

  /** Per-thread rows of one head for the forward's strided keys (K, V) and one block's scratch. */
  private static final class ForwardRows {
    float[] k = new float[0];
    float[] v = new float[0];
    float[] q = new float[0];
    float[] s = new float[0];
    float[] out = new float[0];
    int[] shifts = new int[0];
  }

  private static final ThreadLocal<ForwardRows> FORWARD = ThreadLocal.withInitial(ForwardRows::new);

  /** Copies head slice {@code bh}'s K and V rows for {@link #blockScores} of its query blocks. */
  static void beginForwardHead(AttentionGeometry g, int bh, AttentionOperands o) {
    ForwardRows f = FORWARD.get();
    int slice = g.seqLen * g.headDim;
    if (f.k.length < slice) {
      f.k = new float[slice];
      f.v = new float[slice];
    }
    NativeGemm blas = NativeGemm.of(g.type);
    NativeGemm.readFloats(blas.at(o.kAddr, (long) bh * slice), f.k, slice);
    NativeGemm.readFloats(blas.at(o.vAddr, (long) bh * slice), f.v, slice);
  }

  /**
   * The forward's strided extra keys of query block qb (rows {@code qRowsAt}, b x d) of head slice
   * bh, after {@link #beginForwardHead}: the scaled scores of every shift that has a pair in the
   * block, {@code s[e b + t]} for entry e (-inf where row t has none), and {@code rowMax[t]} raised
   * to them. Returns the number of entries.
   */
  static int blockScores(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      long qRowsAt,
      float[] rowMax) {
    final int b = g.block;
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final int i0 = qb * b;
    final float sc = (float) scale;
    ForwardRows f = FORWARD.get();
    int maxEntries = 0;
    for (int st : layout.strides()) {
      maxEntries += (i0 + b - 1) / st;
    }
    if (f.q.length < b * d) {
      f.q = new float[b * d];
      f.out = new float[b * d];
    }
    if (f.s.length < maxEntries * b) {
      f.s = new float[maxEntries * b];
    }
    if (f.shifts.length < maxEntries) {
      f.shifts = new int[maxEntries];
    }
    NativeGemm.readFloats(qRowsAt, f.q, b * d);
    int entries = 0;
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      long[] bits = layout.strideExtraBits(head, si);
      int words = layout.strideExtraWords(si);
      for (int shift = st; shift <= i0 + b - 1; shift += st) {
        int off = entries * b;
        if (shiftScores(bits, words, st, shift, i0, b, d, sc, f.q, f.k, f.s, off)) {
          for (int t = 0; t < b; t++) {
            rowMax[t] = Math.max(rowMax[t], f.s[off + t]);
          }
          f.shifts[entries++] = shift;
        }
      }
    }
    return entries;
  }

  /**
   * With the row maxima {@code max} final: replaces each of {@link #blockScores}'s entries by
   * {@code exp(s - max)} and adds them to the row sums {@code sum[t]}. {@link #blockOutput} then
   * weights them by the rows' inverse totals.
   */
  static void blockExp(int entries, int b, float[] max, double[] sum) {
    ForwardRows f = FORWARD.get();
    for (int e = 0; e < entries; e++) {
      int off = e * b;
      for (int t = 0; t < b; t += L) {
        FloatVector mv = FloatVector.fromArray(SP, max, t);
        ExactVectorMath.exp(FloatVector.fromArray(SP, f.s, off + t).sub(mv))
            .intoArray(f.s, off + t);
      }
      for (int t = 0; t < b; t++) {
        sum[t] += f.s[off + t];
      }
    }
  }

  /**
   * The strided share of the block's output rows, {@code sum_e w_e[t] inv[t] V[i0 + t - shift_e]}
   * with the weights {@link #blockExp} left: a {@code b x d} array valid until this thread's next
   * block.
   */
  static float[] blockOutput(AttentionGeometry g, int qb, int entries, float[] inv) {
    final int b = g.block;
    final int d = g.headDim;
    final int i0 = qb * b;
    ForwardRows f = FORWARD.get();
    Arrays.fill(f.out, 0, b * d, 0f);
    for (int e = 0; e < entries; e++) {
      int off = e * b;
      for (int t = 0; t < b; t++) {
        float w = f.s[off + t];
        if (w != 0f) {
          StridedVectorKernel.axpy(w * inv[t], f.v, (i0 + t - f.shifts[e]) * d, f.out, t * d, d);
        }
      }
    }
    return f.out;
  }

  /** This thread's P row of {@link #blockBackward}, grown on demand. */
  private static final ThreadLocal<float[][]> BLOCK_P =
      ThreadLocal.withInitial(() -> new float[1][0]);

  /**
   * The scaled scores {@code scale q_t . k_(i0 + t - shift)} of the block's rows t whose key at
   * this shift is a strided extra (bits of {@link BlockLayout#strideExtraBits} for stride st), -inf
   * for the other rows, into {@code out[off + t]}; false when no row has one.
   */
  private static boolean shiftScores(
      long[] bits,
      int words,
      int st,
      int shift,
      int i0,
      int b,
      int d,
      float sc,
      float[] q,
      float[] k,
      float[] out,
      int off) {
    int m = shift / st;
    boolean any = false;
    for (int t = 0; t < b; t++) {
      int i = i0 + t;
      int c = i / st - m; // the key's index in its residue class
      if (i >= shift && (bits[i * words + (c >>> 6)] >>> c & 1L) != 0) {
        out[off + t] = sc * StridedVectorKernel.dot(q, t * d, k, (i - shift) * d, d);
        any = true;
      } else {
        out[off + t] = Float.NEGATIVE_INFINITY;
      }
    }
    return any;
  }

  /**
   * The strided extra keys' share of the backward of query block {@code qb} of head slice {@code
   * bh}, run by the Java tile loop on the rows it already holds: Q_I and dO_I ({@code b x d} from
   * row 0), the head's K and V rows ({@code [T, d]}), dQ_I added to {@code dq} and dK, dV to the
   * head's accumulators {@code dk}, {@code dv}. Per shift m the block's keys {@code i - m s} are b
   * consecutive rows, so the pairs of one shift read K and V in order while Q_I, dO_I and dQ_I stay
   * in L1, and their exponentials run as whole vectors; the head-wide pass this replaces ({@link
   * StridedVectorKernel#strideBackward}) read and wrote every row of the head in native memory once
   * more.
   */
  static void blockBackward(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      float[] q,
      float[] dout,
      float[] dq,
      float[] k,
      float[] v,
      float[] dk,
      float[] dv,
      double[] lseAll,
      double[] diAll) {
    final int b = g.block;
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final int base = bh * g.seqLen;
    final int i0 = qb * b;
    final float sc = (float) scale;
    float[][] holder = BLOCK_P.get();
    if (holder[0].length < b) {
      holder[0] = new float[b];
    }
    float[] p = holder[0];
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      long[] bits = layout.strideExtraBits(head, si);
      int words = layout.strideExtraWords(si);
      for (int shift = st; shift <= i0 + b - 1; shift += st) {
        if (!shiftScores(bits, words, st, shift, i0, b, d, sc, q, k, p, 0)) {
          continue;
        }
        for (int t = 0; t < b; t++) {
          p[t] -= (float) lseAll[base + i0 + t];
        }
        // P = exp(scale q_i . k_j - lse_i) as whole vectors (0 where no pair), then per pair
        // dS = P (dO_i . v_j - D_i) scale ; dQ_i += dS K_j ; dK_j += dS Q_i ; dV_j += P dO_i
        for (int t = 0; t < b; t += L) {
          ExactVectorMath.exp(FloatVector.fromArray(SP, p, t)).intoArray(p, t);
        }
        for (int t = 0; t < b; t++) {
          if (p[t] != 0f) {
            int j = (i0 + t - shift) * d;
            int qo = t * d;
            float dp = StridedVectorKernel.dot(dout, qo, v, j, d);
            float ds = p[t] * (dp - (float) diAll[base + i0 + t]) * sc;
            pairUpdate(ds, p[t], k, q, dout, j, qo, dq, dk, dv, d);
          }
        }
      }
    }
  }

  /**
   * One strided pair's row updates, in one pass along x: {@code dq[qo..] += ds k[j..]}, {@code
   * dk[j..] += ds q[qo..]}, {@code dv[j..] += p dout[qo..]}. A method of its own on purpose:
   * written out in {@link #blockBackward}'s loop, C2 lost the exact vector class of one store there
   * and fell back to boxed lanes (the backward 2x slower); as three {@link
   * StridedVectorKernel#axpy} calls it cost three calls.
   */
  private static void pairUpdate(
      float ds,
      float p,
      float[] k,
      float[] q,
      float[] dout,
      int j,
      int qo,
      float[] dq,
      float[] dk,
      float[] dv,
      int d) {
    FloatVector dsv = FloatVector.broadcast(SP, ds);
    FloatVector pv = FloatVector.broadcast(SP, p);
    int x = 0;
    for (; x + L <= d; x += L) {
      FloatVector.fromArray(SP, k, j + x)
          .fma(dsv, FloatVector.fromArray(SP, dq, qo + x))
          .intoArray(dq, qo + x);
      FloatVector.fromArray(SP, q, qo + x)
          .fma(dsv, FloatVector.fromArray(SP, dk, j + x))
          .intoArray(dk, j + x);
      FloatVector.fromArray(SP, dout, qo + x)
          .fma(pv, FloatVector.fromArray(SP, dv, j + x))
          .intoArray(dv, j + x);
    }
    for (; x < d; x++) {
      dq[qo + x] = Math.fma(ds, k[j + x], dq[qo + x]);
      dk[j + x] = Math.fma(ds, q[qo + x], dk[j + x]);
      dv[j + x] = Math.fma(p, dout[qo + x], dv[j + x]);
    }
  }
}
