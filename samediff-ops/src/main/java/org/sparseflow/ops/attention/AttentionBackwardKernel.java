package org.sparseflow.ops.attention;

import org.nd4j.linalg.api.buffer.DataType;
import org.sparseflow.ops.matmul.VectorSupport;

/**
 * The backward kernel of {@link SparseAttention} for one (batch, head): {@code dP = dO V^T}, {@code
 * dS = P (dP - rowsum(dO * O))}, {@code dQ = scale dS K}, {@code dK = scale dS^T Q}, {@code dV =
 * P^T dO} on the kept tiles, recomputing {@code P} from the stored log-sum-exp (the products as
 * Java micro-kernels in fp32 with the Vector API, {@link VectorTileProducts}, native GEMMs
 * otherwise).
 */
final class AttentionBackwardKernel {
  private AttentionBackwardKernel() {}

  /**
   * True when the strided keys run in fp32 Java with the vector module: per query block inside the
   * Java tiles ({@link StridedBlocks}), or, beside native-GEMM tiles, head-wide in {@link
   * StridedVectorKernel} (the backward first, the tiles accumulating on top); otherwise the scalar
   * path (native GEMMs per residue class, which needs Java copies of O and dO) runs after the
   * tiles.
   */
  static boolean vectorStrides(AttentionGeometry g, BlockLayout layout) {
    return g.type == DataType.FLOAT && VectorSupport.AVAILABLE && layout.strides().length > 0;
  }

  /**
   * The backward pass of head slice {@code bh}; {@code outRowsAddr} is O's [rows, D] array when
   * this head computes its own {@code diAll} rows (fp32), 0 when the caller filled them.
   */
  static void backwardHead(
      AttentionGeometry g,
      BlockLayout layout,
      double scale,
      int bh,
      AttentionOperands o,
      long doAddr,
      long outRowsAddr,
      double[] lseAll,
      double[] diAll,
      double[] oa,
      double[] doa,
      long[] gradAddr) {
    final int b = g.block;
    final int d = g.headDim;
    final int T = g.seqLen;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * T;
    final int nb = T / b;
    final NativeGemm blas = NativeGemm.of(g.type);
    final long dqAddr = gradAddr[0];
    final long dkAddr = gradAddr[1];
    final long dvAddr = gradAddr[2];
    // fp32 element-wise step with the Vector API where it is loaded (scalar double loop otherwise)
    final boolean vec =
        g.type == DataType.FLOAT && VectorSupport.AVAILABLE && AttentionVectorOps.applies(b);
    final float[] lseF = new float[b];
    final float[] diF = new float[b];
    // strided keys: per query block inside the Java tile loop, else head-wide first (vector) or
    // after the tiles (scalar)
    final boolean blockStrides = vec && layout.strides().length > 0;
    final boolean stridesFirst = vectorStrides(g, layout) && !vec;
    if (outRowsAddr != 0) { // D_i = rowsum(dO o O) of this head's rows (fp32 inputs)
      double[] di =
          NativeGemm.rowDotsFloat(blas.at(doAddr, base * d), blas.at(outRowsAddr, base * d), T, d);
      System.arraycopy(di, 0, diAll, (int) base, T);
    }
    if (stridesFirst) { // writes every element of the head's slices of dQ, dK and dV
      StridedVectorKernel.strideBackward(g, layout, scale, bh, o, doAddr, lseAll, diAll, gradAddr);
    } else if (!vec) {
      // dK and dV accumulate over query blocks: cleared first (dQ's first product overwrites it)
      blas.zero(blas.at(dkAddr, base * d), (long) T * d);
      blas.zero(blas.at(dvAddr, base * d), (long) T * d);
    }
    if (vec) { // the Java tiles accumulate dK and dV in Java for the whole head
      VectorTileProducts.beginHead(
          T * d, blas.at(o.kAddr, base * d), blas.at(o.vAddr, base * d), blockStrides);
    }
    // element-wise contributions of the extra keys for this (batch, head) slice
    double[] dqX = null;
    double[] dkX = null;
    double[] dvX = null;
    int maxKeys = 0;
    for (int qb = 0; qb < nb; qb++) {
      maxKeys = Math.max(maxKeys, layout.keyBlocksNoCopy(head, qb).length * b);
    }
    long scratch = vec ? 1 : (long) maxKeys * b; // the Java tiles need no native scratch
    try (NativeGemm.Scratch st = blas.scratch(scratch);
        NativeGemm.Scratch dpt = blas.scratch(scratch)) {
      // fp32 tiles of the widest query block, reused by every block of this head
      float[] pfAll = vec ? new float[maxKeys * b] : null;
      float[] dsfAll = vec ? new float[maxKeys * b] : null;
      for (int qb = 0; qb < nb; qb++) {
        int[] kb = layout.keyBlocksNoCopy(head, qb);
        int[] runs = AttentionForwardKernel.runs(kb);
        int nk = kb.length * b;
        long qRow = base + (long) qb * b;
        long qAt = blas.at(o.qAddr, qRow * d);
        long doAt = blas.at(doAddr, qRow * d);
        // S^T[run] = scale K_run Q_I^T ; dP^T[run] = V_run dO_I^T
        int diagOff = nk - b;
        float[] pf = null;
        float[] dsf = null;
        if (vec) {
          pf = pfAll;
          dsf = dsfAll;
          VectorTileProducts.backwardScores(
              blas, runs, base, b, d, scale, o.kAddr, o.vAddr, qAt, doAt, pf, dsf);
          for (int t = 0; t < b; t++) {
            int row = (int) (qRow + t);
            lseF[t] = (float) lseAll[row];
            diF[t] = (float) diAll[row];
          }
          AttentionVectorOps.softmaxGrad(pf, dsf, nk, b, diagOff, lseF, diF);
        } else {
          AttentionForwardKernel.keyRunProducts(blas, runs, base, b, d, scale, o.kAddr, qAt, st);
          AttentionForwardKernel.keyRunProducts(blas, runs, base, b, d, 1.0, o.vAddr, doAt, dpt);
          double[] p = st.read(nk * b);
          double[] ds = dpt.read(nk * b);
          for (int t = 0; t < b; t++) {
            int row = (int) (qRow + t);
            double lseI = lseAll[row];
            double di = diAll[row]; // rowsum(dO * O)
            for (int c = 0; c < nk; c++) {
              int idx = c * b + t;
              boolean masked = c >= diagOff && (c - diagOff) > t;
              double pv = masked ? 0.0 : Math.exp(p[idx] - lseI);
              p[idx] = pv;
              ds[idx] = pv * (ds[idx] - di);
            }
          }
          st.write(p, nk * b);
          dpt.write(ds, nk * b);
        }
        for (int t = 0; o.qa != null && t < b; t++) {
          int i = qb * b + t;
          int[] ex = layout.otherExtrasNoCopy(head, i);
          if (ex != null && ex.length > 0) {
            if (dqX == null) {
              dqX = new double[T * d];
              dkX = new double[T * d];
              dvX = new double[T * d];
            }
            int row = (int) (base + i);
            double lseI = lseAll[row];
            double di = diAll[row];
            int qo = row * d;
            for (int e = 0; e < ex.length; e++) {
              int ko = (int) ((base + ex[e]) * d);
              int lo = ex[e] * d;
              double pe = Math.exp(StridedAttention.dot(o.qa, qo, o.ka, ko, d) * scale - lseI);
              double dse = pe * (StridedAttention.dot(doa, qo, o.va, ko, d) - di) * scale;
              StridedAttention.axpy(dse, o.ka, ko, dqX, i * d, d);
              StridedAttention.axpy(dse, o.qa, qo, dkX, lo, d);
              StridedAttention.axpy(pe, doa, qo, dvX, lo, d);
            }
          }
        }
        long dqAt = blas.at(dqAddr, qRow * d);
        if (vec) {
          if (blockStrides) {
            VectorTileProducts.stridedBlock(g, layout, scale, bh, qb, lseAll, diAll);
          }
          VectorTileProducts.backwardTile(runs, b, d, scale, pf, dsf, dqAt, blockStrides);
          continue;
        }
        int off = 0;
        for (int r = 0; r < runs.length; r += 2) {
          int len = runs[r + 1] * b;
          long kRow = base + (long) runs[r] * b;
          long dsRun = dpt.at((long) off * b);
          // dQ_I (+)= scale dS_run K_run ; dK_run += scale dS_run^T Q_I ; dV_run += P_run^T dO_I
          blas.gemm(
              true,
              false,
              b,
              d,
              len,
              scale,
              dsRun,
              b,
              blas.at(o.kAddr, kRow * d),
              d,
              r == 0 && !stridesFirst ? 0.0 : 1.0,
              dqAt,
              d);
          blas.gemm(
              false, false, len, d, b, scale, dsRun, b, qAt, d, 1.0, blas.at(dkAddr, kRow * d), d);
          blas.gemm(
              false,
              false,
              len,
              d,
              b,
              1.0,
              st.at((long) off * b),
              b,
              doAt,
              d,
              1.0,
              blas.at(dvAddr, kRow * d),
              d);
          off += len;
        }
      }
    }
    if (vec) {
      VectorTileProducts.endHead(blas.at(dkAddr, base * d), blas.at(dvAddr, base * d), T * d);
    }
    if (!stridesFirst && !blockStrides) {
      StridedAttention.strideBackward(g, layout, scale, bh, o, doAddr, lseAll, oa, doa, gradAddr);
    }
    if (dqX != null) {
      blas.addInto(blas.at(dqAddr, base * d), dqX, T * d);
      blas.addInto(blas.at(dkAddr, base * d), dkX, T * d);
      blas.addInto(blas.at(dvAddr, base * d), dvX, T * d);
    }
  }
}
