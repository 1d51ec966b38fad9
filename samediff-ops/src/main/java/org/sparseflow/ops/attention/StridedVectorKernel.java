package org.sparseflow.ops.attention;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * fp32 JDK Vector API versions of {@link StridedAttention}'s forward scores and output ({@link
 * #strideScores}, {@link #strideOutput}) and of {@link StridedAttention#strideBackward} for one
 * (batch, head). The backward: the strided extra keys' gradients per residue class {@code r, r+s,
 * r+2s, ...} (Child et al. 2019, arXiv 1904.10509: on one residue class the strided pattern is
 * dense causal attention), computed on Java copies of the head's rows instead of five tiny native
 * GEMMs per class (16 x 16 x 64 at T = 2048, s = 128, where the call overhead dominated and half of
 * each product lies above the causal diagonal).
 *
 * <p>Per class: {@code S = scale Q_r K_r^T} and {@code dP = dO_r V_r^T} vectorised along the keys
 * (K_r and V_r transposed into a small panel padded to whole vectors), the element-wise step in
 * double ({@code P = exp(S - lse)}, {@code dS = P (dP - D)}) on the strided extra pairs only, then
 * {@code dQ += scale dS K_r}, {@code dK += scale dS^T Q_r}, {@code dV += P^T dO_r} vectorised along
 * the head dimension over the kept pairs. Every sum runs in a fixed order, so results do not depend
 * on the thread count. The gradients are written (not added) to the head's slices of dq, dk and dv,
 * which must be zero before: the caller then accumulates the tiles on top. Only loaded with {@code
 * --add-modules jdk.incubator.vector}.
 */
final class StridedVectorKernel {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();

  /** Per-thread copies of one head's rows and the per-class panels, grown on demand. */
  private static final class Buffers {
    float[] q = new float[0];
    float[] k = new float[0];
    float[] v = new float[0];
    float[] dout = new float[0];
    float[] dq = new float[0];
    float[] dk = new float[0];
    float[] dv = new float[0];
    float[] kt = new float[0];
    float[] vt = new float[0];
    // one residue class's rows, gathered contiguous (n x d): the class's rows lie st * d apart, a
    // power-of-two stride whose rows share cache sets, so working on them in place thrashed L1/L2
    float[] qr = new float[0];
    float[] kr = new float[0];
    float[] vr = new float[0];
    float[] dor = new float[0];
    float[] dqr = new float[0];
    float[] dkr = new float[0];
    float[] dvr = new float[0];
    float[] s = new float[0];
    float[] dp = new float[0];
    float[] p = new float[0];
    float[] ds = new float[0];

    void ensure(int slice, int panel, int tile) {
      if (q.length < slice) {
        q = new float[slice];
        k = new float[slice];
        v = new float[slice];
        dout = new float[slice];
        dq = new float[slice];
        dk = new float[slice];
        dv = new float[slice];
      }
      if (kt.length < panel) {
        kt = new float[panel];
        vt = new float[panel];
        qr = new float[panel];
        kr = new float[panel];
        vr = new float[panel];
        dor = new float[panel];
        dqr = new float[panel];
        dkr = new float[panel];
        dvr = new float[panel];
      }
      if (s.length < tile) {
        s = new float[tile];
        dp = new float[tile];
        p = new float[tile];
        ds = new float[tile];
      }
    }
  }

  private static final ThreadLocal<Buffers> BUF = ThreadLocal.withInitial(Buffers::new);

  private StridedVectorKernel() {}

  /**
   * Writes the strided extra keys' share of dq, dk and dv of head slice {@code bh} (zero before).
   */
  static void strideBackward(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      AttentionOperands o,
      long doAddr,
      double[] lseAll,
      double[] diAll,
      long[] gradAddr) {
    final int d = g.headDim;
    final int seqLen = g.seqLen;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * seqLen;
    final int slice = seqLen * d;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    Buffers bf = prepare(strides, seqLen, d);
    NativeGemm.readFloats(blas.at(o.qAddr, base * d), bf.q, slice);
    NativeGemm.readFloats(blas.at(o.kAddr, base * d), bf.k, slice);
    NativeGemm.readFloats(blas.at(o.vAddr, base * d), bf.v, slice);
    NativeGemm.readFloats(blas.at(doAddr, base * d), bf.dout, slice);
    Arrays.fill(bf.dq, 0, slice, 0f);
    Arrays.fill(bf.dk, 0, slice, 0f);
    Arrays.fill(bf.dv, 0, slice, 0f);
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      for (int r = 0; r < Math.min(st, seqLen); r++) {
        int n = StridedAttention.residueLength(seqLen, st, r);
        if (n >= 2) {
          residue(bf, layout, head, si, st, r, n, d, scale, base, lseAll, diAll);
        }
      }
    }
    NativeGemm.writeFloats(blas.at(gradAddr[0], base * d), bf.dq, slice);
    NativeGemm.writeFloats(blas.at(gradAddr[1], base * d), bf.dk, slice);
    NativeGemm.writeFloats(blas.at(gradAddr[2], base * d), bf.dv, slice);
  }

  /**
   * Vector version of {@link StridedAttention#strideScores} for head slice {@code bh}: per residue
   * class, {@code S = Q_r K_r^T} vectorised along the keys (K_r transposed into a panel), stored
   * scaled as {@code scores[si][row * nMax + c]} on the strided extra pairs, -inf elsewhere (the
   * same layout the tile phase and {@link #strideOutput} read).
   */
  static void strideScores(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      AttentionOperands o,
      double[][] scores) {
    final int d = g.headDim;
    final int seqLen = g.seqLen;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    Buffers bf = prepare(strides, seqLen, d);
    NativeGemm.readFloats(blas.at(o.qAddr, base * d), bf.q, seqLen * d);
    NativeGemm.readFloats(blas.at(o.kAddr, base * d), bf.k, seqLen * d);
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = StridedAttention.residueLength(seqLen, st, 0);
      double[] out = scores[si];
      double[] row = new double[nMax];
      for (int r = 0; r < Math.min(st, seqLen); r++) {
        int n = StridedAttention.residueLength(seqLen, st, r);
        int np = pad(n);
        if (n >= 2) {
          gather(bf.k, r, st, n, d, bf.kr);
          transpose(bf.kr, bf.kt, n, np, d);
        }
        for (int a = 0; a < n; a++) {
          int i = r + a * st;
          if (a > 0) {
            VectorPanels.panelRow(bf.q, i * d, bf.kt, np, d, bf.s, a * np);
          }
          for (int c = 0; c < a; c++) {
            row[c] = scale * bf.s[a * np + c];
          }
          StridedAttention.storeRow(
              layout, head, si, st, r, a, row, 0, out, (int) (base + i) * nMax, nMax);
        }
      }
    }
  }

  /**
   * Vector version of {@link StridedAttention#strideOutput}: {@code O += P V} over the strided
   * extra keys of head slice {@code bh}, {@code P = exp(S - lse)} from the stored scores, summed
   * along the head dimension in a Java copy and added to O once.
   */
  static void strideOutput(
      AttentionGeometry g,
      BlockLayout layout,
      int bh,
      AttentionOperands o,
      long outAddr,
      double[] lseAll,
      double[][] scores) {
    final int d = g.headDim;
    final int seqLen = g.seqLen;
    final int slice = seqLen * d;
    final long base = (long) bh * seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    Buffers bf = prepare(strides, seqLen, d);
    NativeGemm.readFloats(blas.at(o.vAddr, base * d), bf.v, slice);
    float[] delta = bf.dq; // the strided share of O
    Arrays.fill(delta, 0, slice, 0f);
    boolean anyAll = false;
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = StridedAttention.residueLength(seqLen, st, 0);
      double[] sc = scores[si];
      for (int r = 0; r < Math.min(st, seqLen); r++) {
        int n = StridedAttention.residueLength(seqLen, st, r);
        int np = pad(n);
        boolean any = false;
        for (int a = 1; a < n; a++) {
          int row = (int) (base + r + a * st);
          double lse = lseAll[row];
          for (int c = 0; c < a; c++) {
            double sv = sc[row * nMax + c];
            boolean kept = sv != Double.NEGATIVE_INFINITY;
            bf.p[a * np + c] = kept ? (float) Math.exp(sv - lse) : 0f;
            any |= kept;
          }
        }
        if (any) {
          anyAll = true;
          gather(bf.v, r, st, n, d, bf.vr);
          for (int a = 1; a < n; a++) {
            VectorPanels.weighted(delta, (r + a * st) * d, d, bf.vr, 0, d, bf.p, a * np, 1, 0, a);
          }
        }
      }
    }
    if (anyAll) {
      long at = blas.at(outAddr, base * d);
      NativeGemm.readFloats(at, bf.dk, slice);
      addInto(bf.dk, delta, slice);
      NativeGemm.writeFloats(at, bf.dk, slice);
    }
  }

  /** {@code y[x] += delta[x]} for x < n. */
  private static void addInto(float[] y, float[] delta, int n) {
    int x = 0;
    for (; x + L <= n; x += L) {
      FloatVector.fromArray(SP, y, x).add(FloatVector.fromArray(SP, delta, x)).intoArray(y, x);
    }
    for (; x < n; x++) {
      y[x] += delta[x];
    }
  }

  /** This thread's buffers, large enough for the strides of a sequence of seqLen, head dim d. */
  private static Buffers prepare(int[] strides, int seqLen, int d) {
    int nPadMax = 0;
    for (int st : strides) {
      nPadMax = Math.max(nPadMax, pad(StridedAttention.residueLength(seqLen, st, 0)));
    }
    Buffers bf = BUF.get();
    bf.ensure(seqLen * d, d * nPadMax, nPadMax * nPadMax);
    return bf;
  }

  /** {@code dst[a d + x] = src[(r + a st) d + x]} for a < n: class r's rows, contiguous. */
  private static void gather(float[] src, int r, int st, int n, int d, float[] dst) {
    for (int a = 0; a < n; a++) {
      System.arraycopy(src, (r + a * st) * d, dst, a * d, d);
    }
  }

  /** {@code dst[(r + a st) d + x] += src[a d + x]} for a < n: the inverse of {@link #gather}. */
  private static void scatterAdd(float[] src, int r, int st, int n, int d, float[] dst) {
    for (int a = 0; a < n; a++) {
      int o = (r + a * st) * d;
      int x = 0;
      for (; x + L <= d; x += L) {
        FloatVector.fromArray(SP, dst, o + x)
            .add(FloatVector.fromArray(SP, src, a * d + x))
            .intoArray(dst, o + x);
      }
      for (; x < d; x++) {
        dst[o + x] += src[a * d + x];
      }
    }
  }

  /** {@code panel[x * np + c] = rows[c d + x]} for c < n, zero for n <= c < np. */
  private static void transpose(float[] rows, float[] panel, int n, int np, int d) {
    for (int x = 0; x < d; x++) {
      Arrays.fill(panel, x * np + n, x * np + np, 0f);
    }
    for (int c = 0; c < n; c++) {
      int ko = c * d;
      for (int x = 0; x < d; x++) {
        panel[x * np + c] = rows[ko + x];
      }
    }
  }

  /** n rounded up to whole vectors. */
  private static int pad(int n) {
    return (n + L - 1) / L * L;
  }

  /** One residue class r of stride st: n positions r, r + st, ... (row offsets relative to bh). */
  private static void residue(
      Buffers bf,
      BlockLayout layout,
      int head,
      int si,
      int st,
      int r,
      int n,
      int d,
      double scale,
      long base,
      double[] lseAll,
      double[] diAll) {
    final int np = pad(n);
    final float[] kt = bf.kt;
    final float[] vt = bf.vt;
    gather(bf.q, r, st, n, d, bf.qr);
    gather(bf.k, r, st, n, d, bf.kr);
    gather(bf.v, r, st, n, d, bf.vr);
    gather(bf.dout, r, st, n, d, bf.dor);
    // K_r^T and V_r^T as [d x np] panels, zero beyond n
    transpose(bf.kr, kt, n, np, d);
    transpose(bf.vr, vt, n, np, d);
    // S = Q_r K_r^T and dP = dO_r V_r^T, rows a, keys c along the lanes
    final float[] s = bf.s;
    final float[] dp = bf.dp;
    for (int a = 1; a < n; a++) {
      VectorPanels.panelRow(bf.qr, a * d, kt, np, d, s, a * np);
      VectorPanels.panelRow(bf.dor, a * d, vt, np, d, dp, a * np);
    }
    // element-wise step on the strided extra pairs (c < a); zero elsewhere
    final float[] p = bf.p;
    final float[] ds = bf.ds;
    boolean any = false;
    for (int a = 0; a < n; a++) {
      int i = r + a * st;
      int row = (int) (base + i);
      double lse = lseAll[row];
      double di = diAll[row];
      for (int c = 0; c < n; c++) {
        int idx = a * np + c;
        if (c < a && layout.isStrideExtra(head, si, i, r + c * st)) {
          double pe = Math.exp(scale * s[idx] - lse);
          p[idx] = (float) pe;
          ds[idx] = (float) (pe * (dp[idx] - di) * scale);
          any = true;
        } else {
          p[idx] = 0f;
          ds[idx] = 0f;
        }
      }
    }
    if (any) {
      accumulate(bf, n, np, d);
      scatterAdd(bf.dqr, r, st, n, d, bf.dq);
      scatterAdd(bf.dkr, r, st, n, d, bf.dk);
      scatterAdd(bf.dvr, r, st, n, d, bf.dv);
    }
  }

  /**
   * On the class's contiguous rows: dQ_a = sum_c dS[a][c] K_c, dK_c = sum_a dS[a][c] Q_a, dV_c =
   * sum_a P[a][c] dO_a over the pairs c < a (dS already scaled).
   */
  private static void accumulate(Buffers bf, int n, int np, int d) {
    Arrays.fill(bf.dqr, 0, n * d, 0f);
    Arrays.fill(bf.dkr, 0, n * d, 0f);
    Arrays.fill(bf.dvr, 0, n * d, 0f);
    for (int a = 1; a < n; a++) {
      VectorPanels.weighted(bf.dqr, a * d, d, bf.kr, 0, d, bf.ds, a * np, 1, 0, a);
    }
    for (int c = 0; c + 1 < n; c++) {
      VectorPanels.weighted(bf.dkr, c * d, d, bf.qr, 0, d, bf.ds, c, np, c + 1, n);
      VectorPanels.weighted(bf.dvr, c * d, d, bf.dor, 0, d, bf.p, c, np, c + 1, n);
    }
  }
}
