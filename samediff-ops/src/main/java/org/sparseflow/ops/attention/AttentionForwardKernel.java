package org.sparseflow.ops.attention;

import java.util.Arrays;

/**
 * The forward kernel of {@link SparseAttention}: strided scores, then per (batch, head, query
 * block) the kept key tiles (one GEMM per run of consecutive tiles), the causal mask, the softmax
 * with its log-sum-exp, and {@code P V}; then the strided output.
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
    {
      int nb = g.seqLen / g.block;
      int tasks = g.batch * g.heads * nb;
      long work = g.rows() * g.headDim * (long) g.seqLen;
      int[] strides = layout.strides();
      double[][] strideScores = new double[strides.length][];
      for (int si = 0; si < strides.length; si++) {
        strideScores[si] =
            new double[(int) g.rows() * StridedAttention.residueLength(g.seqLen, strides[si], 0)];
      }
      if (strides.length > 0) {
        AttentionThreads.parallelFor(
            g.batch * g.heads,
            work,
            bh -> StridedAttention.strideScores(g, layout, scale, bh, o, strideScores));
      }
      // larger query blocks first (more tiles under dense-like layouts) for better balance
      AttentionThreads.parallelFor(
          tasks,
          work,
          t -> {
            int bh = t / nb;
            int qb = nb - 1 - (t % nb);
            forwardTile(g, layout, scale, bh, qb, o, outAddr, lseAll, strideScores);
          });
      if (strides.length > 0) {
        AttentionThreads.parallelFor(
            g.batch * g.heads,
            work,
            bh -> StridedAttention.strideOutput(g, layout, bh, o, outAddr, lseAll, strideScores));
      }
    }
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

  static void forwardTile(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      AttentionOperands o,
      long outAddr,
      double[] lseAll,
      double[][] strideScores) {
    final int b = g.block;
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] kb = layout.keyBlocksNoCopy(head, qb);
    int[] runs = runs(kb);
    int nk = kb.length * b;
    long qRow = base + (long) qb * b;
    try (NativeGemm.Scratch st = blas.scratch((long) nk * b)) {
      int off = 0;
      for (int r = 0; r < runs.length; r += 2) {
        int len = runs[r + 1] * b;
        long kRow = base + (long) runs[r] * b;
        // S^T[run] = scale * K_run Q_I^T   ([len x b])
        blas.gemm(
            false,
            true,
            len,
            b,
            d,
            scale,
            blas.at(o.kAddr, kRow * d),
            d,
            blas.at(o.qAddr, qRow * d),
            d,
            0.0,
            st.at((long) off * b),
            b);
        off += len;
      }
      double[] s = st.read(nk * b); // s[key * b + t]
      int diagOff = nk - b; // key blocks are sorted and qb (the diagonal) is the largest
      double[] delta = null;
      for (int t = 0; t < b; t++) {
        int i = qb * b + t;
        for (int c = t + 1; c < b; c++) { // causal mask inside the diagonal tile
          s[(diagOff + c) * b + t] = Double.NEGATIVE_INFINITY;
        }
        int[] ex = o.qa == null ? null : layout.otherExtrasNoCopy(head, i);
        double[] es = null;
        double max = Double.NEGATIVE_INFINITY;
        for (int c = 0; c < nk; c++) {
          max = Math.max(max, s[c * b + t]);
        }
        if (ex != null && ex.length > 0) {
          es = new double[ex.length];
          int qo = (int) ((base + i) * d);
          for (int e = 0; e < ex.length; e++) {
            es[e] = StridedAttention.dot(o.qa, qo, o.ka, (int) ((base + ex[e]) * d), d) * scale;
            max = Math.max(max, es[e]);
          }
        }
        int row = (int) (base + i);
        for (int si = 0; si < strideScores.length; si++) {
          int nMax = strideScores[si].length / (int) g.rows();
          for (int c = 0; c < nMax; c++) {
            max = Math.max(max, strideScores[si][row * nMax + c]);
          }
        }
        double sum = 0;
        for (int c = 0; c < nk; c++) {
          double p = Math.exp(s[c * b + t] - max);
          s[c * b + t] = p;
          sum += p;
        }
        for (int si = 0; si < strideScores.length; si++) {
          int nMax = strideScores[si].length / (int) g.rows();
          for (int c = 0; c < nMax; c++) {
            double sv = strideScores[si][row * nMax + c];
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
        double inv = 1.0 / sum;
        for (int c = 0; c < nk; c++) {
          s[c * b + t] *= inv;
        }
        lseAll[(int) (base + i)] = max + Math.log(sum);
        if (es != null) {
          if (delta == null) {
            delta = new double[b * d];
          }
          for (int e = 0; e < es.length; e++) {
            double p = es[e] * inv;
            int vo = (int) ((base + ex[e]) * d);
            StridedAttention.axpy(p, o.va, vo, delta, t * d, d);
          }
        }
      }
      st.write(s, nk * b);
      long oAt = blas.at(outAddr, qRow * d);
      off = 0;
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
}
