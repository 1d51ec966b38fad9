package org.sparseflow.ops.attention;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * fp32 JDK Vector API versions of {@link StridedAttention}'s forward scores and output ({@link
 * #strideScores}, {@link #strideOutput}) and of {@link StridedAttention#strideBackward} for one
 * (batch, head): the strided extra keys {@code j = i - m s} of query {@code i} (Child et al. 2019,
 * arXiv 1904.10509), those no kept tile covers, pair by pair on Java copies of the head's rows: a
 * dot product along the head dimension for each score ({@code q_i . k_j}, {@code dO_i . v_j}) and
 * one row update for each share of O, dQ, dK and dV. Used when the tiles run as native GEMMs (fp32
 * with a block that is not a whole number of vectors); with the Java tiles the strided keys run per
 * query block inside them ({@link StridedBlocks}, which shares {@link #dot} and {@link #axpy}).
 *
 * <p>Why this shape (T = 2048, s = 128, block 64, where the strided pairs are 4 % of the pairs):
 * per residue class {@code r, r + s, ...}, as before, every class was a 16 x 16 x 64 product with
 * its own gathers and transposes; transposing whole heads to vectorise along the queries cost as
 * much; reading the rows in native memory through byte buffers (no copies) cost more than the
 * copies. Pairs are visited shift by shift, queries ascending, so the keys ascend too (per query,
 * the keys of all shifts lie {@code s d} floats apart, a power of two that maps them onto the same
 * cache sets).
 *
 * <p>Every sum runs in a fixed order (the lanes of a dot product are added as a fixed tree, never
 * by {@code reduceLanes}, whose order C2 may change), so results depend neither on the thread count
 * nor on the JIT. The backward writes every element of the head's slices of dq, dk and dv; the
 * tiles then accumulate on top. Only loaded with {@code --add-modules jdk.incubator.vector}.
 */
final class StridedVectorKernel {
  private static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
  private static final int L = SP.length();

  /** Per-thread copies of one head's rows and gradients. */
  private static final class Buffers {
    float[] q = new float[0];
    float[] k = new float[0];
    float[] v = new float[0];
    float[] dout = new float[0];
    float[] dq = new float[0];
    float[] dk = new float[0];
    float[] dv = new float[0];

    Buffers ensure(int slice) {
      if (q.length < slice) {
        q = new float[slice];
        k = new float[slice];
        v = new float[slice];
        dout = new float[slice];
        dq = new float[slice];
        dk = new float[slice];
        dv = new float[slice];
      }
      return this;
    }
  }

  private static final ThreadLocal<Buffers> BUF = ThreadLocal.withInitial(Buffers::new);

  /** Shuffles bringing lane l + w to lane l, for w = L/2, L/4, ..., 1 (the dot's lane tree). */
  private static final VectorShuffle<Float>[] HALVES = halves();

  @SuppressWarnings("unchecked")
  private static VectorShuffle<Float>[] halves() {
    VectorShuffle<Float>[] h = new VectorShuffle[Integer.numberOfTrailingZeros(L)];
    for (int lvl = 0; lvl < h.length; lvl++) {
      int w = L >> (lvl + 1);
      h[lvl] = VectorShuffle.fromOp(SP, l -> (l + w) % L);
    }
    return h;
  }

  private StridedVectorKernel() {}

  /**
   * Vector version of {@link StridedAttention#strideScores} for head slice {@code bh}: the scaled
   * scores of the strided extra pairs, stored as {@code scores[si][row * nMax + c]} with {@code c =
   * i / s - m} (-inf for every other entry of the head's rows: the layout the tile phase and {@link
   * #strideOutput} read).
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
    final int slice = seqLen * d;
    final NativeGemm blas = NativeGemm.of(g.type);
    Buffers bf = BUF.get().ensure(slice);
    float[] q = read(blas, o.qAddr, base, slice, d, bf.q);
    float[] k = read(blas, o.kAddr, base, slice, d, bf.k);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = StridedAttention.residueLength(seqLen, st, 0);
      double[] out = scores[si];
      Arrays.fill(out, (int) base * nMax, (int) (base + seqLen) * nMax, Double.NEGATIVE_INFINITY);
      for (int m = 1; m * st < seqLen; m++) { // shift by shift (see the class comment)
        for (int i = m * st; i < seqLen; i++) {
          int j = i - m * st;
          if (layout.isStrideExtra(head, si, i, j)) {
            out[(int) (base + i) * nMax + i / st - m] = scale * dot(q, i * d, k, j * d, d);
          }
        }
      }
    }
  }

  /**
   * Vector version of {@link StridedAttention#strideOutput}: {@code O += P V} over the strided
   * extra keys of head slice {@code bh}, {@code P = exp(S - lse)} from the stored scores.
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
    Buffers bf = BUF.get().ensure(slice);
    float[] v = read(blas, o.vAddr, base, slice, d, bf.v);
    float[] out = read(blas, outAddr, base, slice, d, bf.dq);
    boolean any = false;
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = StridedAttention.residueLength(seqLen, st, 0);
      double[] sc = scores[si];
      for (int m = 1; m * st < seqLen; m++) { // shift by shift (see the class comment)
        for (int i = m * st; i < seqLen; i++) {
          int row = (int) (base + i);
          double sv = sc[row * nMax + i / st - m];
          if (sv != Double.NEGATIVE_INFINITY) {
            axpy((float) Math.exp(sv - lseAll[row]), v, (i - m * st) * d, out, i * d, d);
            any = true;
          }
        }
      }
    }
    if (any) {
      NativeGemm.writeFloats(blas.at(outAddr, base * d), out, slice);
    }
  }

  /**
   * Writes the strided extra keys' share of dq, dk and dv of head slice {@code bh}: every element
   * of the head's slices (the tiles then accumulate on top).
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
    Buffers bf = BUF.get().ensure(slice);
    float[] q = read(blas, o.qAddr, base, slice, d, bf.q);
    float[] k = read(blas, o.kAddr, base, slice, d, bf.k);
    float[] v = read(blas, o.vAddr, base, slice, d, bf.v);
    float[] dout = read(blas, doAddr, base, slice, d, bf.dout);
    float[] dq = bf.dq;
    float[] dk = bf.dk;
    float[] dv = bf.dv;
    Arrays.fill(dq, 0, slice, 0f);
    Arrays.fill(dk, 0, slice, 0f);
    Arrays.fill(dv, 0, slice, 0f);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      for (int m = 1; m * st < seqLen; m++) { // shift by shift (see the class comment)
        for (int i = m * st; i < seqLen; i++) {
          int j = i - m * st;
          if (!layout.isStrideExtra(head, si, i, j)) {
            continue;
          }
          int row = (int) (base + i);
          // P = exp(scale q_i . k_j - lse_i), dS = P (dO_i . v_j - D_i) scale
          double pe = Math.exp(scale * dot(q, i * d, k, j * d, d) - lseAll[row]);
          double dp = dot(dout, i * d, v, j * d, d);
          float dse = (float) (pe * (dp - diAll[row]) * scale);
          // dQ_i += dS K_j ; dK_j += dS Q_i ; dV_j += P dO_i
          axpy(dse, k, j * d, dq, i * d, d);
          axpy(dse, q, i * d, dk, j * d, d);
          axpy((float) pe, dout, i * d, dv, j * d, d);
        }
      }
    }
    NativeGemm.writeFloats(blas.at(gradAddr[0], base * d), dq, slice);
    NativeGemm.writeFloats(blas.at(gradAddr[1], base * d), dk, slice);
    NativeGemm.writeFloats(blas.at(gradAddr[2], base * d), dv, slice);
  }

  /** Copies head slice {@code base}'s [T, d] fp32 rows of the array at addr into {@code dst}. */
  private static float[] read(
      NativeGemm blas, long addr, long base, int slice, int d, float[] dst) {
    NativeGemm.readFloats(blas.at(addr, base * d), dst, slice);
    return dst;
  }

  /**
   * {@code sum_x a[ao + x] b[bo + x]} for x < d: two vector chains along x, then the lanes added as
   * a fixed tree of shuffles (lane l + w onto lane l, w halving: the same bits however C2 compiles
   * it; the same tree through a float[] cost about twice as much per pair, store-to-load stalls),
   * then the scalar tail.
   */
  static float dot(float[] a, int ao, float[] b, int bo, int d) {
    FloatVector acc0 = FloatVector.zero(SP);
    FloatVector acc1 = FloatVector.zero(SP);
    int x = 0;
    for (; x + 2 * L <= d; x += 2 * L) {
      acc0 = FloatVector.fromArray(SP, a, ao + x).fma(FloatVector.fromArray(SP, b, bo + x), acc0);
      acc1 =
          FloatVector.fromArray(SP, a, ao + x + L)
              .fma(FloatVector.fromArray(SP, b, bo + x + L), acc1);
    }
    for (; x + L <= d; x += L) {
      acc0 = FloatVector.fromArray(SP, a, ao + x).fma(FloatVector.fromArray(SP, b, bo + x), acc0);
    }
    FloatVector v = acc0.add(acc1);
    for (VectorShuffle<Float> half : HALVES) { // a fixed tree: lanes l and l + w, w halving
      v = v.add(v.rearrange(half));
    }
    float s = v.lane(0);
    for (; x < d; x++) {
      s = Math.fma(a[ao + x], b[bo + x], s);
    }
    return s;
  }

  /** {@code y[yOff + x] += w src[srcOff + x]} for x < d, vectorised along x. */
  static void axpy(float w, float[] src, int srcOff, float[] y, int yOff, int d) {
    FloatVector wv = FloatVector.broadcast(SP, w);
    int x = 0;
    for (; x + L <= d; x += L) {
      FloatVector.fromArray(SP, src, srcOff + x)
          .fma(wv, FloatVector.fromArray(SP, y, yOff + x))
          .intoArray(y, yOff + x);
    }
    for (; x < d; x++) {
      y[yOff + x] = Math.fma(w, src[srcOff + x], y[yOff + x]);
    }
  }
}
