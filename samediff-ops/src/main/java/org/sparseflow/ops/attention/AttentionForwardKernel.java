package org.sparseflow.ops.attention;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The forward kernel of {@link SparseAttention}: strided scores, then per (batch, head, query
 * block) the kept key tiles (one product per run of consecutive tiles: Java micro-kernels in fp32
 * with the Vector API, {@link VectorTileProducts}, native GEMMs otherwise), the causal mask, the
 * softmax with its log-sum-exp, and {@code P V}; then the strided output.
 */
final class AttentionForwardKernel {
  private AttentionForwardKernel() {}

  /**
   * Strided scores, tiles, strided output: three parallel phases (the first and last only with
   * strides).
   */
  static void forwardPhases(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      AttentionOperands o,
      long outAddr,
      double[] lseAll) {
    int nb = g.seqLen / g.block;
    int tasks = g.batch * g.heads * nb;
    long work = g.rows() * g.headDim * (long) g.seqLen;
    int[] strides = layout.strides();
    if (strides.length > 0 && javaTiles(g)) {
      // strided keys per query block inside the Java tiles. A task copies its head's K and V rows
      // once and runs every chunks-th query block of the head from the largest down; a head is cut
      // into chunks only when there are fewer heads than threads (the results are the same bits
      // whatever the cut: each block's arithmetic is its own)
      int slices = g.batch * g.heads;
      int chunks = Math.max(1, Math.min(nb, (AttentionThreads.threads() + slices - 1) / slices));
      double[][] none = new double[0][];
      AttentionThreads.parallelFor(
          slices * chunks,
          work,
          task -> {
            int bh = task / chunks;
            StridedBlocks.beginForwardHead(g, bh, o);
            for (int qb = nb - 1 - task % chunks; qb >= 0; qb -= chunks) {
              forwardTile(g, layout, scale, bh, qb, o, outAddr, lseAll, none, true);
            }
          });
      return;
    }
    double[][] strideScores = new double[strides.length][];
    for (int si = 0; si < strides.length; si++) {
      strideScores[si] =
          new double[(int) g.rows() * StridedAttention.residueLength(g.seqLen, strides[si], 0)];
    }
    // fp32 with the vector module: the strided products in Java (two tiny native GEMMs per
    // residue class otherwise, 16 x 16 x 64 at T = 2048, s = 128, where the calls dominate)
    boolean vec = AttentionBackwardKernel.vectorStrides(g, layout);
    if (strides.length > 0) {
      AttentionThreads.parallelFor(
          g.batch * g.heads,
          work,
          bh -> {
            if (vec) {
              StridedVectorKernel.strideScores(g, layout, scale, bh, o, strideScores);
            } else {
              StridedAttention.strideScores(g, layout, scale, bh, o, strideScores);
            }
          });
    }
    // larger query blocks first (more tiles under dense-like layouts) for better balance
    AttentionThreads.parallelFor(
        tasks,
        work,
        t -> {
          int bh = t / nb;
          int qb = nb - 1 - (t % nb);
          forwardTile(g, layout, scale, bh, qb, o, outAddr, lseAll, strideScores, false);
        });
    if (strides.length > 0) {
      AttentionThreads.parallelFor(
          g.batch * g.heads,
          work,
          bh -> {
            if (vec) {
              StridedVectorKernel.strideOutput(g, layout, bh, o, outAddr, lseAll, strideScores);
            } else {
              StridedAttention.strideOutput(g, layout, bh, o, outAddr, lseAll, strideScores);
            }
          });
    }
  }

  /** Whether the tiles run as fp32 Java micro-kernels (the Vector API loaded, b whole vectors). */
  static boolean javaTiles(AttentionGeometry g) {
    return g.type == DataType.FLOAT
        && VectorSupport.AVAILABLE
        && AttentionVectorOps.applies(g.block);
  }

  /**
   * Splits sorted key blocks into runs of consecutive blocks: {start0, len0, start1, len1, ...}.
   */
  static int[] runs(int[] kb) {
    int[] tmp = new int[kb.length * 2];
    int n = 0;
    for (int i = 0; i < kb.length; ) {
      int j = i;
      while (j + 1 < kb.length && kb[j + 1] == kb[j] + 1) {
        j++;
      }
      tmp[n++] = kb[i];
      tmp[n++] = j - i + 1;
      i = j + 1;
    }
    return Arrays.copyOf(tmp, n);
  }

  /**
   * {@code out[run] = alpha X_run A^T} ([len x b] each, packed run after run into {@code out}) for
   * every run of consecutive key blocks ({@link #runs}), X [T x d] at {@code xAddr} from row {@code
   * base}, A the b query rows [b x d] at {@code aAt}: with X = K, A = Q_I and alpha = scale the
   * transposed scores S^T of the forward and backward passes, with X = V, A = dO_I and alpha = 1
   * the transposed dP^T of the backward pass.
   */
  static void keyRunProducts(
      NativeGemm blas,
      int[] runs,
      long base,
      int b,
      int d,
      double alpha,
      long xAddr,
      long aAt,
      NativeGemm.Scratch out) {
    int off = 0;
    for (int r = 0; r < runs.length; r += 2) {
      int len = runs[r + 1] * b;
      long xRow = base + (long) runs[r] * b;
      blas.gemm(
          false,
          true,
          len,
          b,
          d,
          alpha,
          blas.at(xAddr, xRow * d),
          d,
          aAt,
          d,
          0.0,
          out.at((long) off * b),
          b);
      off += len;
    }
  }

  private static final ThreadLocal<float[]> TILE = ThreadLocal.withInitial(() -> new float[0]);

  /** This thread's fp32 score tile, at least n long (its tail beyond n is never read). */
  private static float[] tile(int n) {
    float[] t = TILE.get();
    if (t.length < n) {
      t = new float[n];
      TILE.set(t);
    }
    return t;
  }

  static void forwardTile(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      AttentionOperands o,
      long outAddr,
      double[] lseAll,
      double[][] ss,
      boolean blockStrides) {
    final int b = g.block;
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] kb = layout.keyBlocksNoCopy(head, qb);
    int[] runs = runs(kb);
    int nk = kb.length * b;
    long qRow = base + (long) qb * b;
    boolean vec = javaTiles(g);
    try (NativeGemm.Scratch st = blas.scratch(vec ? 1 : (long) nk * b)) {
      // S^T[run] = scale * K_run Q_I^T   ([len x b])
      float[] sf = vec ? tile(nk * b) : null; // sf[key * b + t]
      if (vec) {
        VectorTileProducts.scoresT(
            blas, runs, base, b, d, scale, o.kAddr, blas.at(o.qAddr, qRow * d), sf);
      } else {
        keyRunProducts(blas, runs, base, b, d, scale, o.kAddr, blas.at(o.qAddr, qRow * d), st);
      }
      int diagOff = nk - b; // key blocks are sorted and qb (the diagonal) is the largest
      double[] delta = null;
      double[][] es = new double[b][];
      if (vec) {
        // fp32 tiles with the Vector API, vectorised over the query rows; extras per row
        for (int t = 0; t < b; t++) {
          for (int c = t + 1; c < b; c++) { // causal mask inside the diagonal tile
            sf[(diagOff + c) * b + t] = Float.NEGATIVE_INFINITY;
          }
        }
        float[] rowF = new float[b];
        AttentionVectorOps.columnMax(sf, nk, b, rowF);
        int entries =
            blockStrides
                ? StridedBlocks.blockScores(
                    g, layout, scale, bh, qb, blas.at(o.qAddr, qRow * d), rowF)
                : 0;
        for (int t = 0; t < b; t++) {
          int i = qb * b + t;
          rowF[t] = (float) extrasMax(g, layout, scale, o, head, base, i, rowF[t], es, t, ss);
        }
        double[] max = new double[b];
        for (int t = 0; t < b; t++) {
          max[t] = rowF[t];
        }
        double[] stridedSum = new double[b];
        if (entries > 0) {
          StridedBlocks.blockExp(entries, b, rowF, stridedSum);
        }
        AttentionVectorOps.expColumns(sf, nk, b, rowF); // rowF: max in, sum out
        for (int t = 0; t < b; t++) {
          int i = qb * b + t;
          double sum = rowF[t] + stridedSum[t] + extrasSum(g, base + i, max[t], es[t], ss);
          lseAll[(int) (base + i)] = max[t] + Math.log(sum);
          rowF[t] = (float) (1.0 / sum);
          delta = extrasOutput(g, layout, o, head, base, i, t, es[t], 1.0 / sum, delta);
        }
        AttentionVectorOps.scaleColumns(sf, nk, b, rowF);
        float[] stridedOut = entries > 0 ? StridedBlocks.blockOutput(g, qb, entries, rowF) : null;
        VectorTileProducts.output(
            blas, runs, base, b, d, o.vAddr, sf, delta, stridedOut, blas.at(outAddr, qRow * d));
        return;
      } else {
        double[] s = st.read(nk * b); // s[key * b + t]
        for (int t = 0; t < b; t++) {
          int i = qb * b + t;
          for (int c = t + 1; c < b; c++) { // causal mask inside the diagonal tile
            s[(diagOff + c) * b + t] = Double.NEGATIVE_INFINITY;
          }
          double max = Double.NEGATIVE_INFINITY;
          for (int c = 0; c < nk; c++) {
            max = Math.max(max, s[c * b + t]);
          }
          max = extrasMax(g, layout, scale, o, head, base, i, max, es, t, ss);
          double sum = 0;
          for (int c = 0; c < nk; c++) {
            double p = Math.exp(s[c * b + t] - max);
            s[c * b + t] = p;
            sum += p;
          }
          sum += extrasSum(g, base + i, max, es[t], ss);
          double inv = 1.0 / sum;
          for (int c = 0; c < nk; c++) {
            s[c * b + t] *= inv;
          }
          lseAll[(int) (base + i)] = max + Math.log(sum);
          delta = extrasOutput(g, layout, o, head, base, i, t, es[t], inv, delta);
        }
        st.write(s, nk * b);
      }
      long oAt = blas.at(outAddr, qRow * d);
      int off = 0;
      for (int r = 0; r < runs.length; r += 2) {
        int len = runs[r + 1] * b;
        long vRow = base + (long) runs[r] * b;
        // O_I (+)= P_run V_run, P_run = (P^T[run])^T
        blas.gemm(
            true,
            false,
            b,
            d,
            len,
            1.0,
            st.at((long) off * b),
            b,
            blas.at(o.vAddr, vRow * d),
            d,
            r == 0 ? 0.0 : 1.0,
            oAt,
            d);
        off += len;
      }
      if (delta != null) {
        blas.addInto(oAt, delta, b * d);
      }
    }
  }

  /**
   * Row maximum over the extra keys of query {@code i}: {@code max} (that of the tiles) raised by
   * the other extras (their scaled scores stored in {@code es[t]}) and the strided scores.
   */
  private static double extrasMax(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      AttentionOperands o,
      int head,
      long base,
      int i,
      double max,
      double[][] es,
      int t,
      double[][] ss) {
    int[] ex = o.qa == null ? null : layout.otherExtrasNoCopy(head, i);
    double m = max;
    if (ex != null && ex.length > 0) {
      double[] e = new double[ex.length];
      int qo = (int) ((base + i) * g.headDim);
      for (int x = 0; x < ex.length; x++) {
        int ko = (int) ((base + ex[x]) * g.headDim);
        e[x] = StridedAttention.dot(o.qa, qo, o.ka, ko, g.headDim) * scale;
        m = Math.max(m, e[x]);
      }
      es[t] = e;
    }
    int row = (int) (base + i);
    for (int si = 0; si < ss.length; si++) {
      int nMax = ss[si].length / (int) g.rows();
      for (int c = 0; c < nMax; c++) {
        m = Math.max(m, ss[si][row * nMax + c]);
      }
    }
    return m;
  }

  /** Sum of exp(score - max) over the strided scores and the extras ({@code es} exponentiated). */
  private static double extrasSum(
      AttentionGeometry g, long rowIndex, double max, double[] es, double[][] ss) {
    int row = (int) rowIndex;
    double sum = 0;
    for (int si = 0; si < ss.length; si++) {
      int nMax = ss[si].length / (int) g.rows();
      for (int c = 0; c < nMax; c++) {
        double sv = ss[si][row * nMax + c];
        if (sv != Double.NEGATIVE_INFINITY) {
          sum += Math.exp(sv - max);
        }
      }
    }
    if (es != null) {
      for (int e = 0; e < es.length; e++) {
        es[e] = Math.exp(es[e] - max);
        sum += es[e];
      }
    }
    return sum;
  }

  /** Adds the extras' share {@code sum_e p_e V_e} of row t to {@code delta} (created on demand). */
  private static double[] extrasOutput(
      AttentionGeometry g,
      BlockLayout layout,
      AttentionOperands o,
      int head,
      long base,
      int i,
      int t,
      double[] es,
      double inv,
      double[] delta) {
    if (es == null) {
      return delta;
    }
    int[] ex = layout.otherExtrasNoCopy(head, i);
    double[] dl = delta == null ? new double[g.block * g.headDim] : delta;
    for (int e = 0; e < es.length; e++) {
      int vo = (int) ((base + ex[e]) * g.headDim);
      StridedAttention.axpy(es[e] * inv, o.va, vo, dl, t * g.headDim, g.headDim);
    }
    return dl;
  }
}
