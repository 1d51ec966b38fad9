package org.sparseflow.ops.attention;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * fp32 Vector API versions of the attention tiles' products, in place of native GEMM calls per run
 * of key blocks (192 x 64 x 64 for {@code local:128} at block 64, where OpenBLAS, held to its AVX2
 * kernels on some hosts, ran them at about two thirds of the dense layout's per-FLOP rate): the
 * transposed scores {@code S^T = scale K_run Q_I^T} (and {@code dP^T}) vectorised along the query
 * rows ({@link #scoresT}), {@code O_I = P V} ({@link #output}) and the backward's dQ, dK and dV
 * ({@link #backwardTile}) vectorised along the head dimension, all on register-blocked 4-row x
 * 4-vector micro-tiles (docs/experiments/attention-warmup-2026-12-07-epyc.md). Only loaded with
 * {@code --add-modules jdk.incubator.vector}.
 */
final class VectorTileProducts {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();

  /** Per-thread copies of the tile's rows, grown on demand. */
  private static final class Buffers {
    float[] rows = new float[0];
    float[] qt = new float[0];
    float[] o = new float[0];
    float[] q = new float[0];
    float[] dout = new float[0];
    float[] keys = new float[0];
    float[] headDk = new float[0];
    float[] headDv = new float[0];
    float[] headK = new float[0];
    float[] headV = new float[0];

    Buffers ensure(int rowFloats, int tileFloats) {
      if (rows.length < rowFloats) {
        rows = new float[rowFloats];
      }
      if (qt.length < tileFloats) {
        qt = new float[tileFloats];
        o = new float[tileFloats];
        q = new float[tileFloats];
        dout = new float[tileFloats];
      }
      return this;
    }

    Buffers ensureHead(int headFloats, boolean rows) {
      if (headDk.length < headFloats) {
        headDk = new float[headFloats];
        headDv = new float[headFloats];
      }
      if (rows && headK.length < headFloats) {
        headK = new float[headFloats];
        headV = new float[headFloats];
      }
      return this;
    }

    Buffers ensureKeys(int keyFloats) {
      if (keys.length < keyFloats) {
        keys = new float[keyFloats];
      }
      return this;
    }
  }

  private static final ThreadLocal<Buffers> BUF = ThreadLocal.withInitial(Buffers::new);

  private VectorTileProducts() {}

  /**
   * {@code sf[(off + c) b + t] = scale K[key c] . Q[query t]} for the keys of every run ({@link
   * AttentionForwardKernel#runs}), packed run after run as {@link
   * AttentionForwardKernel#keyRunProducts} lays them out; Q_I is the b query rows at {@code qAt}.
   */
  static void scoresT(
      NativeGemm blas,
      int[] runs,
      long base,
      int b,
      int d,
      double scale,
      long kAddr,
      long qAt,
      float[] sf) {
    Buffers bf = BUF.get().ensure(maxRun(runs, b) * d, b * d);
    NativeGemm.readFloats(qAt, bf.rows, b * d);
    transposeScaled(bf.rows, b, d, (float) scale, bf.qt);
    runScores(blas, runs, base, b, d, kAddr, bf.rows, false, bf.qt, sf);
  }

  /**
   * The backward's two score tiles of one query block, laid out as {@link #scoresT} leaves them:
   * {@code p = scale K_run Q_I^T} and {@code dp = V_run dO_I^T}. Q_I, dO_I and every run's K rows
   * stay in this thread's buffers for {@link #backwardTile} of the same block, which so reads none
   * of them again.
   */
  static void backwardScores(
      NativeGemm blas,
      int[] runs,
      long base,
      int b,
      int d,
      double scale,
      long kAddr,
      long vAddr,
      long qAt,
      long doAt,
      float[] p,
      float[] dp) {
    Buffers bf = BUF.get().ensure(maxRun(runs, b) * d, b * d).ensureKeys(keyCount(runs, b) * d);
    NativeGemm.readFloats(qAt, bf.q, b * d);
    transposeScaled(bf.q, b, d, (float) scale, bf.qt);
    runScores(blas, runs, base, b, d, kAddr, bf.keys, true, bf.qt, p);
    NativeGemm.readFloats(doAt, bf.dout, b * d);
    transposeScaled(bf.dout, b, d, 1f, bf.qt);
    runScores(blas, runs, base, b, d, vAddr, bf.rows, false, bf.qt, dp);
  }

  /**
   * {@code out = X_run qt} run after run ({@link #scoresT}'s layout), X's rows read from {@code
   * xAddr} into {@code dst}: all runs kept one after another when {@code keep}, else each run over
   * the previous one.
   */
  private static void runScores(
      NativeGemm blas,
      int[] runs,
      long base,
      int b,
      int d,
      long xAddr,
      float[] dst,
      boolean keep,
      float[] qt,
      float[] out) {
    int off = 0;
    for (int r = 0; r < runs.length; r += 2) {
      int len = runs[r + 1] * b;
      int at = keep ? off * d : 0;
      NativeGemm.readFloats(blas.at(xAddr, (base + (long) runs[r] * b) * d), dst, at, len * d);
      panelScores(dst, at, len, d, qt, b, out, off * b);
      off += len;
    }
  }

  /** {@code qt[x b + t] = s a[t d + x]}: the b rows of a block, transposed and scaled. */
  private static void transposeScaled(float[] a, int b, int d, float s, float[] qt) {
    for (int t = 0; t < b; t++) {
      for (int x = 0; x < d; x++) {
        qt[x * b + t] = s * a[t * d + x];
      }
    }
  }

  /** {@code out[outOff + c b + t] = k[kOff + c d] . qt[., t]} for the len key rows c. */
  private static void panelScores(
      float[] k, int kOff, int len, int d, float[] qt, int b, float[] out, int outOff) {
    if (blocked(b)) {
      for (int c = 0; c < len; c += 4) {
        for (int t0 = 0; t0 < b; t0 += 4 * L) {
          scores4x4(k, kOff + c * d, d, qt, b, t0, out, outOff + c * b);
        }
      }
    } else {
      for (int c = 0; c < len; c++) {
        VectorPanels.panelRow(k, kOff + c * d, qt, b, d, out, outOff + c * b);
      }
    }
  }

  private static int keyCount(int[] runs, int b) {
    int n = 0;
    for (int r = 1; r < runs.length; r += 2) {
      n += runs[r] * b;
    }
    return n;
  }

  /**
   * {@code O_I = P V (+ delta + deltaF, either may be null)} written to the b output rows at {@code
   * oAt}, with {@code P^T} in {@code sf} laid out as {@link #scoresT} leaves it and V's key rows
   * read run by run.
   */
  static void output(
      NativeGemm blas,
      int[] runs,
      long base,
      int b,
      int d,
      long vAddr,
      float[] sf,
      double[] delta,
      float[] deltaF,
      long oAt) {
    Buffers bf = BUF.get().ensure(maxRun(runs, b) * d, b * d);
    float[] rows = bf.rows;
    float[] o = bf.o;
    Arrays.fill(o, 0, b * d, 0f);
    int off = 0;
    for (int r = 0; r < runs.length; r += 2) {
      int len = runs[r + 1] * b;
      NativeGemm.readFloats(blas.at(vAddr, (base + (long) runs[r] * b) * d), rows, len * d);
      accumulate(rows, 0, len, d, sf, off * b, 1, b, o, 0, b);
      off += len;
    }
    if (delta != null) {
      for (int i = 0; i < b * d; i++) {
        o[i] = (float) (o[i] + delta[i]);
      }
    }
    if (deltaF != null) {
      for (int i = 0; i < b * d; i++) {
        o[i] += deltaF[i];
      }
    }
    NativeGemm.writeFloats(oAt, o, b * d);
  }

  /**
   * Starts this thread's Java accumulators of one head's dK and dV ([T, d] each, {@code n = T d}
   * floats, zeroed), which {@link #backwardTile} adds to for every query block of the head and
   * {@link #endHead} writes once. Every tile used to read and write its key runs' rows in native
   * memory instead, several times per key block (once per query block that keeps it).
   */
  static void beginHead(int n, long kAt, long vAt, boolean rows) {
    Buffers bf = BUF.get().ensureHead(n, rows);
    if (rows) {
      NativeGemm.readFloats(kAt, bf.headK, n);
      NativeGemm.readFloats(vAt, bf.headV, n);
    }
    Arrays.fill(bf.headDk, 0, n, 0f);
    Arrays.fill(bf.headDv, 0, n, 0f);
  }

  /**
   * Starts dQ_I of query block qb with the strided extra keys' share ({@link
   * StridedBlocks#blockBackward}) on the rows {@link #backwardScores} and {@link #beginHead} left;
   * {@link #backwardTile} then adds the tiles (with {@code dqStarted}).
   */
  static void stridedBlock(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      double[] lseAll,
      double[] diAll) {
    Buffers bf = BUF.get();
    Arrays.fill(bf.o, 0, g.block * g.headDim, 0f);
    StridedBlocks.blockBackward(
        g, layout, scale, bh, qb, bf.q, bf.dout, bf.o, bf.headK, bf.headV, bf.headDk, bf.headDv,
        lseAll, diAll);
  }

  /** Writes the head's dK and dV accumulated since {@link #beginHead} to the native arrays. */
  static void endHead(long dkAt, long dvAt, int n) {
    Buffers bf = BUF.get();
    NativeGemm.writeFloats(dkAt, bf.headDk, n);
    NativeGemm.writeFloats(dvAt, bf.headDv, n);
  }

  /**
   * The backward tile's three accumulating products, in place of three native GEMMs per run: {@code
   * dQ_I += scale dS K_run}, {@code dK_run += scale dS^T Q_I}, {@code dV_run += P^T dO_I} (into the
   * head's accumulators, see {@link #beginHead}), with {@code P^T} in {@code p} and {@code dS^T} in
   * {@code ds} (overwritten: scaled) laid out as {@link #scoresT} leaves them, and Q_I, dO_I and
   * the K rows where {@link #backwardScores} of the same block, on this thread, left them. dQ_I is
   * overwritten unless {@code dqStarted} (then added to {@link #stridedBlock}'s share).
   */
  static void backwardTile(
      int[] runs, int b, int d, double scale, float[] p, float[] ds, long dqAt, boolean dqStarted) {
    Buffers bf = BUF.get();
    int nk = keyCount(runs, b);
    float s = (float) scale;
    for (int i = 0; i < nk * b; i++) {
      ds[i] *= s;
    }
    float[] dq = bf.o;
    if (!dqStarted) {
      Arrays.fill(dq, 0, b * d, 0f);
    }
    int off = 0;
    for (int r = 0; r < runs.length; r += 2) {
      int len = runs[r + 1] * b;
      int row0 = runs[r] * b * d; // in the head's dK and dV
      accumulate(bf.keys, off * d, len, d, ds, off * b, 1, b, dq, 0, b);
      accumulate(bf.q, 0, b, d, ds, off * b, b, 1, bf.headDk, row0, len);
      accumulate(bf.dout, 0, b, d, p, off * b, b, 1, bf.headDv, row0, len);
      off += len;
    }
    NativeGemm.writeFloats(dqAt, dq, b * d);
  }

  /**
   * {@code o[i d + x] += sum_{j < len} w[wOff + i wRow + j wCol] v[j d + x]} for rows i < rows, in
   * order of j: 4-row x 4-vector micro-tiles where rows and d allow, rows one by one otherwise.
   */
  private static void accumulate(
      float[] v,
      int vOff,
      int len,
      int d,
      float[] w,
      int wOff,
      int wRow,
      int wCol,
      float[] o,
      int oOff,
      int rows) {
    if (rows % 4 == 0 && blocked(d)) {
      for (int i = 0; i < rows; i += 4) {
        for (int x0 = 0; x0 < d; x0 += 4 * L) {
          acc4x4(v, vOff, d, len, w, wOff + i * wRow, wRow, wCol, o, oOff + i * d, x0);
        }
      }
    } else {
      for (int i = 0; i < rows; i++) {
        VectorPanels.weighted(o, oOff + i * d, d, v, vOff, d, w, wOff + i * wRow, wCol, 0, len);
      }
    }
  }

  /** Whether n splits into micro-tiles of four vectors (and so also into four rows). */
  private static boolean blocked(int n) {
    return n % (4 * L) == 0;
  }

  /**
   * Micro-tile of {@link #scoresT}: key rows c..c+3 ({@code k} from {@code kOff}, d apart) times
   * query columns t0..t0+4L of the panel {@code qt[x b + t]}: 16 accumulators, each panel load and
   * each broadcast used four times.
   */
  private static void scores4x4(
      float[] k, int kOff, int d, float[] qt, int b, int t0, float[] out, int outOff) {
    FloatVector a00 = FloatVector.zero(SP), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
    FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    for (int x = 0; x < d; x++) {
      int p = x * b + t0;
      FloatVector p0 = FloatVector.fromArray(SP, qt, p);
      FloatVector p1 = FloatVector.fromArray(SP, qt, p + L);
      FloatVector p2 = FloatVector.fromArray(SP, qt, p + 2 * L);
      FloatVector p3 = FloatVector.fromArray(SP, qt, p + 3 * L);
      FloatVector k0 = FloatVector.broadcast(SP, k[kOff + x]);
      a00 = p0.fma(k0, a00);
      a01 = p1.fma(k0, a01);
      a02 = p2.fma(k0, a02);
      a03 = p3.fma(k0, a03);
      FloatVector k1 = FloatVector.broadcast(SP, k[kOff + d + x]);
      a10 = p0.fma(k1, a10);
      a11 = p1.fma(k1, a11);
      a12 = p2.fma(k1, a12);
      a13 = p3.fma(k1, a13);
      FloatVector k2 = FloatVector.broadcast(SP, k[kOff + 2 * d + x]);
      a20 = p0.fma(k2, a20);
      a21 = p1.fma(k2, a21);
      a22 = p2.fma(k2, a22);
      a23 = p3.fma(k2, a23);
      FloatVector k3 = FloatVector.broadcast(SP, k[kOff + 3 * d + x]);
      a30 = p0.fma(k3, a30);
      a31 = p1.fma(k3, a31);
      a32 = p2.fma(k3, a32);
      a33 = p3.fma(k3, a33);
    }
    int o = outOff + t0;
    a00.intoArray(out, o);
    a01.intoArray(out, o + L);
    a02.intoArray(out, o + 2 * L);
    a03.intoArray(out, o + 3 * L);
    a10.intoArray(out, o + b);
    a11.intoArray(out, o + b + L);
    a12.intoArray(out, o + b + 2 * L);
    a13.intoArray(out, o + b + 3 * L);
    a20.intoArray(out, o + 2 * b);
    a21.intoArray(out, o + 2 * b + L);
    a22.intoArray(out, o + 2 * b + 2 * L);
    a23.intoArray(out, o + 2 * b + 3 * L);
    a30.intoArray(out, o + 3 * b);
    a31.intoArray(out, o + 3 * b + L);
    a32.intoArray(out, o + 3 * b + 2 * L);
    a33.intoArray(out, o + 3 * b + 3 * L);
  }

  /**
   * Micro-tile of {@link #accumulate}: rows 0..3 of {@code o} from {@code oOff} (d apart), columns
   * x0..x0+4L, {@code += sum_j w[wOff + i wRow + j wCol] v[j d + x]} in order of j.
   */
  private static void acc4x4(
      float[] v,
      int vOff,
      int d,
      int len,
      float[] w,
      int wOff,
      int wRow,
      int wCol,
      float[] o,
      int oOff,
      int x0) {
    int r0 = oOff + x0;
    FloatVector a00 = FloatVector.fromArray(SP, o, r0);
    FloatVector a01 = FloatVector.fromArray(SP, o, r0 + L);
    FloatVector a02 = FloatVector.fromArray(SP, o, r0 + 2 * L);
    FloatVector a03 = FloatVector.fromArray(SP, o, r0 + 3 * L);
    FloatVector a10 = FloatVector.fromArray(SP, o, r0 + d);
    FloatVector a11 = FloatVector.fromArray(SP, o, r0 + d + L);
    FloatVector a12 = FloatVector.fromArray(SP, o, r0 + d + 2 * L);
    FloatVector a13 = FloatVector.fromArray(SP, o, r0 + d + 3 * L);
    FloatVector a20 = FloatVector.fromArray(SP, o, r0 + 2 * d);
    FloatVector a21 = FloatVector.fromArray(SP, o, r0 + 2 * d + L);
    FloatVector a22 = FloatVector.fromArray(SP, o, r0 + 2 * d + 2 * L);
    FloatVector a23 = FloatVector.fromArray(SP, o, r0 + 2 * d + 3 * L);
    FloatVector a30 = FloatVector.fromArray(SP, o, r0 + 3 * d);
    FloatVector a31 = FloatVector.fromArray(SP, o, r0 + 3 * d + L);
    FloatVector a32 = FloatVector.fromArray(SP, o, r0 + 3 * d + 2 * L);
    FloatVector a33 = FloatVector.fromArray(SP, o, r0 + 3 * d + 3 * L);
    for (int j = 0; j < len; j++) {
      int vo = vOff + j * d + x0;
      FloatVector v0 = FloatVector.fromArray(SP, v, vo);
      FloatVector v1 = FloatVector.fromArray(SP, v, vo + L);
      FloatVector v2 = FloatVector.fromArray(SP, v, vo + 2 * L);
      FloatVector v3 = FloatVector.fromArray(SP, v, vo + 3 * L);
      int wj = wOff + j * wCol;
      FloatVector w0 = FloatVector.broadcast(SP, w[wj]);
      a00 = v0.fma(w0, a00);
      a01 = v1.fma(w0, a01);
      a02 = v2.fma(w0, a02);
      a03 = v3.fma(w0, a03);
      FloatVector w1 = FloatVector.broadcast(SP, w[wj + wRow]);
      a10 = v0.fma(w1, a10);
      a11 = v1.fma(w1, a11);
      a12 = v2.fma(w1, a12);
      a13 = v3.fma(w1, a13);
      FloatVector w2 = FloatVector.broadcast(SP, w[wj + 2 * wRow]);
      a20 = v0.fma(w2, a20);
      a21 = v1.fma(w2, a21);
      a22 = v2.fma(w2, a22);
      a23 = v3.fma(w2, a23);
      FloatVector w3 = FloatVector.broadcast(SP, w[wj + 3 * wRow]);
      a30 = v0.fma(w3, a30);
      a31 = v1.fma(w3, a31);
      a32 = v2.fma(w3, a32);
      a33 = v3.fma(w3, a33);
    }
    a00.intoArray(o, r0);
    a01.intoArray(o, r0 + L);
    a02.intoArray(o, r0 + 2 * L);
    a03.intoArray(o, r0 + 3 * L);
    a10.intoArray(o, r0 + d);
    a11.intoArray(o, r0 + d + L);
    a12.intoArray(o, r0 + d + 2 * L);
    a13.intoArray(o, r0 + d + 3 * L);
    a20.intoArray(o, r0 + 2 * d);
    a21.intoArray(o, r0 + 2 * d + L);
    a22.intoArray(o, r0 + 2 * d + 2 * L);
    a23.intoArray(o, r0 + 2 * d + 3 * L);
    a30.intoArray(o, r0 + 3 * d);
    a31.intoArray(o, r0 + 3 * d + L);
    a32.intoArray(o, r0 + 3 * d + 2 * L);
    a33.intoArray(o, r0 + 3 * d + 3 * L);
  }

  private static int maxRun(int[] runs, int b) {
    int m = 0;
    for (int r = 1; r < runs.length; r += 2) {
      m = Math.max(m, runs[r] * b);
    }
    return Math.max(m, b);
  }
}
