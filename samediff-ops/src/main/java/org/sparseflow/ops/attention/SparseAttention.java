package org.sparseflow.ops.attention;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * Causal block-sparse softmax attention in Java over ND4J arrays (forward and backward).
 *
 * <p>Inputs {@code q, k, v} have shape {@code [batch, heads, T, headDim]} and one floating type.
 * For each (batch, head, query block {@code I}) the scores of the kept key tiles are computed with
 * one GEMM per run of consecutive kept tiles ({@code S^T = K_run Q_I^T}), the causal mask is
 * applied inside the diagonal tile, the scores of the layout's exact extra keys are added, the row
 * softmax over all of them is taken (its log-sum-exp is stored for the backward pass) and {@code
 * O_I = sum_runs P_run V_run} is again one GEMM per run. Extra keys on a stride ({@code strided:s})
 * are computed per residue class {@code r, r+s, ...} with small GEMMs of leading dimension {@code
 * s*D} (before the tiles for the scores, after them for {@code P V}); other extra keys (fixed
 * summary columns, partial global block) with per-row dot products. Work is therefore proportional
 * to the kept tiles plus the extra keys, never to {@code T^2}. The BLAS calls go straight to
 * OpenBLAS on the arrays' native memory ({@link NativeGemm}); on other backends an O(T^2) ND4J
 * implementation with the same mask runs instead ({@link DenseFallback}).
 *
 * <p>Backward is the standard softmax-attention backward restricted to the kept pairs ({@code dP =
 * dO V^T}, {@code dS = P (dP - rowsum(dO * O))}, {@code dQ = scale dS K}, {@code dK = scale dS^T
 * Q}, {@code dV = P^T dO}), recomputing {@code P} from the stored log-sum-exp.
 *
 * <p>Parallelism: forward runs (batch, head, query block) tasks, backward (batch, head) tasks (so
 * that the dK/dV accumulation of one head stays in one thread), on {@link AttentionThreads}; the
 * BLAS library is set to one thread while the tasks run because many small GEMMs lose their time to
 * BLAS threading.
 *
 * <p>A layout with one head is shared by all heads; otherwise {@code layout.numHeads()} must equal
 * {@code heads}. {@code scale} is usually {@code 1/sqrt(headDim)} ({@link #defaultScale(long)}).
 */
public final class SparseAttention {

  private SparseAttention() {}

  /**
   * Forward outputs: {@code out [B,H,T,D]} and the per-row log-sum-exp {@code lse [B,H,T]} of the
   * scaled scores.
   */
  public static final class Result {
    private final INDArray out;
    private final INDArray lse;

    public Result(INDArray out, INDArray lse) {
      this.out = out;
      this.lse = lse;
    }

    public INDArray out() {
      return out;
    }

    public INDArray lse() {
      return lse;
    }
  }

  /** Gradients with respect to q, k and v, each {@code [B,H,T,D]}. */
  public static final class Grads {
    private final INDArray dq;
    private final INDArray dk;
    private final INDArray dv;

    public Grads(INDArray dq, INDArray dk, INDArray dv) {
      this.dq = dq;
      this.dk = dk;
      this.dv = dv;
    }

    public INDArray dq() {
      return dq;
    }

    public INDArray dk() {
      return dk;
    }

    public INDArray dv() {
      return dv;
    }
  }

  /** {@code 1 / sqrt(headDim)}. */
  public static double defaultScale(long headDim) {
    if (headDim <= 0) {
      throw new IllegalArgumentException("headDim=" + headDim + " must be > 0");
    }
    return 1.0 / Math.sqrt(headDim);
  }

  /** Shape and layout information checked once per call. */
  private static final class Geometry {
    final int batch;
    final int heads;
    final int seqLen;
    final int headDim;
    final int block;
    final DataType type;

    Geometry(INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
      if (layout == null) {
        throw new IllegalArgumentException(
            "layout=null; build one with AttentionPattern.layout(T, blockSize, heads)");
      }
      checkRank4("q", q);
      checkRank4("k", k);
      checkRank4("v", v);
      if (!Arrays.equals(q.shape(), k.shape()) || !Arrays.equals(q.shape(), v.shape())) {
        throw new IllegalArgumentException(
            "q, k, v must have the same shape [batch, heads, T, headDim]; got q="
                + Arrays.toString(q.shape())
                + " k="
                + Arrays.toString(k.shape())
                + " v="
                + Arrays.toString(v.shape()));
      }
      type = q.dataType();
      if (!type.isFPType()) {
        throw new IllegalArgumentException(
            "q dataType=" + type + "; allowed: FLOAT, DOUBLE (floating point)");
      }
      if (k.dataType() != type || v.dataType() != type) {
        throw new IllegalArgumentException(
            "q, k, v must have one data type; got q="
                + type
                + " k="
                + k.dataType()
                + " v="
                + v.dataType());
      }
      batch = (int) q.size(0);
      heads = (int) q.size(1);
      seqLen = (int) q.size(2);
      headDim = (int) q.size(3);
      block = layout.blockSize();
      if (seqLen != layout.seqLen()) {
        throw new IllegalArgumentException(
            "q has T="
                + seqLen
                + " but layout.seqLen="
                + layout.seqLen()
                + "; build the layout for this sequence length (T must be a multiple of blockSize="
                + block
                + ")");
      }
      if (layout.numHeads() != 1 && layout.numHeads() != heads) {
        throw new IllegalArgumentException(
            "q has heads="
                + heads
                + " but layout.numHeads="
                + layout.numHeads()
                + "; allowed: 1 (shared) or "
                + heads);
      }
      if (!(scale > 0) || Double.isInfinite(scale)) {
        throw new IllegalArgumentException("scale=" + scale + " must be a finite number > 0");
      }
    }

    void checkSame(String name, INDArray a) {
      checkRank4(name, a);
      if (!Arrays.equals(a.shape(), new long[] {batch, heads, seqLen, headDim})) {
        throw new IllegalArgumentException(
            name
                + " shape="
                + Arrays.toString(a.shape())
                + "; expected "
                + Arrays.toString(new long[] {batch, heads, seqLen, headDim})
                + " (same as q)");
      }
    }

    long rows() {
      return (long) batch * heads * seqLen;
    }
  }

  private static void checkRank4(String name, INDArray a) {
    if (a == null) {
      throw new IllegalArgumentException(
          name + "=null; expected an array [batch, heads, T, headDim]");
    }
    if (a.rank() != 4) {
      throw new IllegalArgumentException(
          name
              + " shape="
              + Arrays.toString(a.shape())
              + " has rank "
              + a.rank()
              + "; expected rank 4 [batch, heads, T, headDim]");
    }
  }

  /**
   * Throws IllegalArgumentException if {@code a} holds NaN or infinity (names the first bad index).
   */
  static void checkFinite(String name, INDArray a) {
    double s = org.sparseflow.ops.matmul.BlockSparseKernels.probeSum(a);
    if (Double.isFinite(s)) {
      return;
    }
    double[] d = a.dup('c').data().asDouble();
    for (int i = 0; i < d.length; i++) {
      if (!Double.isFinite(d[i])) {
        throw new IllegalArgumentException(
            name
                + " contains "
                + d[i]
                + " at flat index "
                + i
                + " (shape "
                + Arrays.toString(a.shape())
                + "); only finite values are allowed");
      }
    }
  }

  /**
   * c-ordered contiguous [rows, D] version of a [B,H,T,D] array (a view when already contiguous).
   */
  private static INDArray rows2d(INDArray a, Geometry g) {
    INDArray c = (a.ordering() == 'c' && !a.isView()) ? a : a.dup('c');
    return c.reshape('c', g.rows(), g.headDim);
  }

  /** Computes the forward pass into new arrays. */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  public static Result forward(
      INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    Geometry g = new Geometry(q, k, v, layout, scale);
    INDArray out;
    INDArray lse;
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      out = Nd4j.create(g.type, g.batch, g.heads, g.seqLen, g.headDim);
      lse = Nd4j.create(g.type, g.batch, g.heads, g.seqLen);
    }
    forwardInto(q, k, v, layout, scale, out, lse);
    return new Result(out, lse);
  }

  /**
   * Forward pass writing into caller-provided {@code out [B,H,T,D]} and {@code lse [B,H,T]} (used
   * by the SameDiff op). Validates all inputs, including NaN/infinity.
   */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  public static void forwardInto(
      INDArray q,
      INDArray k,
      INDArray v,
      BlockLayout layout,
      double scale,
      INDArray out,
      INDArray lse) {
    Geometry g = new Geometry(q, k, v, layout, scale);
    g.checkSame("out", out);
    if (lse == null || !Arrays.equals(lse.shape(), new long[] {g.batch, g.heads, g.seqLen})) {
      throw new IllegalArgumentException(
          "lse shape="
              + (lse == null ? "null" : Arrays.toString(lse.shape()))
              + "; expected ["
              + g.batch
              + ", "
              + g.heads
              + ", "
              + g.seqLen
              + "]");
    }
    checkFinite("q", q);
    checkFinite("k", k);
    checkFinite("v", v);
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      if (!NativeGemm.available()) {
        DenseFallback.forward(q, k, v, layout, scale, out, lse);
        return;
      }
      Operands o =
          new Operands(g, rows2d(q, g), rows2d(k, g), rows2d(v, g), layout.hasOtherExtras());
      boolean direct = out.ordering() == 'c' && !out.isView() && out.dataType() == g.type;
      INDArray out2 =
          direct ? out.reshape('c', g.rows(), g.headDim) : Nd4j.create(g.type, g.rows(), g.headDim);
      long outAddr = NativeGemm.address(out2);
      double[] lseAll = new double[(int) g.rows()];
      long work = g.rows() * g.headDim * (long) g.seqLen;
      if (work < AttentionThreads.SERIAL_WORK) {
        forwardPhases(g, layout, scale, o, outAddr, lseAll);
      } else {
        AttentionThreads.exclusive(() -> forwardPhases(g, layout, scale, o, outAddr, lseAll));
      }
      if (!direct) {
        out.assign(out2.reshape('c', g.batch, g.heads, g.seqLen, g.headDim));
      }
      lse.assign(NativeGemm.fromDoubles(lseAll, new long[] {g.batch, g.heads, g.seqLen}, g.type));
    }
  }

  /**
   * Strided scores, tiles, strided output: three parallel phases (the first and last only with
   * strides).
   */
  private static void forwardPhases(
      Geometry g, BlockLayout layout, double scale, Operands o, long outAddr, double[] lseAll) {
    {
      int nb = g.seqLen / g.block;
      int tasks = g.batch * g.heads * nb;
      long work = g.rows() * g.headDim * (long) g.seqLen;
      int[] strides = layout.strides();
      double[][] strideScores = new double[strides.length][];
      for (int si = 0; si < strides.length; si++) {
        strideScores[si] = new double[(int) g.rows() * residueLength(g.seqLen, strides[si], 0)];
      }
      if (strides.length > 0) {
        AttentionThreads.parallelFor(
            g.batch * g.heads, work, bh -> strideScores(g, layout, scale, bh, o, strideScores));
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
            bh -> strideOutput(g, layout, bh, o, outAddr, lseAll, strideScores));
      }
    }
  }

  /**
   * Contiguous row-major [B*H*T, D] operands with their native addresses (+ Java copies when
   * needed).
   */
  private static final class Operands {
    final INDArray q2;
    final INDArray k2;
    final INDArray v2;
    final long qAddr;
    final long kAddr;
    final long vAddr;
    final double[] qa;
    final double[] ka;
    final double[] va;

    Operands(Geometry g, INDArray q2, INDArray k2, INDArray v2, boolean javaCopies) {
      this.q2 = q2;
      this.k2 = k2;
      this.v2 = v2;
      qAddr = NativeGemm.address(q2);
      kAddr = NativeGemm.address(k2);
      vAddr = NativeGemm.address(v2);
      qa = javaCopies ? NativeGemm.toDoubles(q2) : null;
      ka = javaCopies ? NativeGemm.toDoubles(k2) : null;
      va = javaCopies ? NativeGemm.toDoubles(v2) : null;
    }
  }

  /**
   * Splits sorted key blocks into runs of consecutive blocks: {start0, len0, start1, len1, ...}.
   */
  private static int[] runs(int[] kb) {
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

  /** Number of positions r, r+s, r+2s, ... below T. */
  private static int residueLength(int seqLen, int stride, int residue) {
    return residue >= seqLen ? 0 : (seqLen - 1 - residue) / stride + 1;
  }

  /**
   * Strided extra keys, one residue class at a time: positions r, r+s, r+2s, ... form a sequence on
   * which the strided pattern is dense causal attention, so its scores are one GEMM with leading
   * dimension s*D (Sparse Transformer's strided attention; Child et al. 2019). Pairs already inside
   * kept tiles (or owned by an earlier stride) are set to -inf. Result: scores[si][row * n + c] for
   * key r + c*s of query row.
   */
  private static void strideScores(
      Geometry g, BlockLayout layout, double scale, int bh, Operands o, double[][] scores) {
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      double[] out = scores[si];
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          long first = (base + r) * d;
          blas.gemm(
              false,
              true,
              n,
              n,
              d,
              scale,
              blas.at(o.qAddr, first),
              st * d,
              blas.at(o.kAddr, first),
              st * d,
              0.0,
              sc.at(0),
              n);
          double[] s = sc.read(n * n);
          for (int a = 0; a < n; a++) {
            int i = r + a * st;
            int rowOff = (int) (base + i) * nMax;
            for (int c = 0; c < nMax; c++) {
              out[rowOff + c] =
                  c < a && layout.isStrideExtra(head, si, i, r + c * st)
                      ? s[a * n + c]
                      : Double.NEGATIVE_INFINITY;
            }
          }
        }
      }
    }
  }

  /**
   * O += P V over the strided extra keys, per residue class (after the row log-sum-exp is final).
   */
  private static void strideOutput(
      Geometry g,
      BlockLayout layout,
      int bh,
      Operands o,
      long outAddr,
      double[] lseAll,
      double[][] scores) {
    final int d = g.headDim;
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          double[] p = new double[n * n];
          boolean any = false;
          for (int a = 0; a < n; a++) {
            int row = (int) (base + r + a * st);
            for (int c = 0; c < a; c++) {
              double sv = scores[si][row * nMax + c];
              if (sv != Double.NEGATIVE_INFINITY) {
                p[a * n + c] = Math.exp(sv - lseAll[row]);
                any = true;
              }
            }
          }
          if (!any) {
            continue;
          }
          sc.write(p, n * n);
          long first = (base + r) * d;
          blas.gemm(
              false,
              false,
              n,
              d,
              n,
              1.0,
              sc.at(0),
              n,
              blas.at(o.vAddr, first),
              st * d,
              1.0,
              blas.at(outAddr, first),
              st * d);
        }
      }
    }
  }

  private static void forwardTile(
      Geometry g,
      BlockLayout layout,
      double scale,
      int bh,
      int qb,
      Operands o,
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
            es[e] = dot(o.qa, qo, o.ka, (int) ((base + ex[e]) * d), d) * scale;
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
            axpy(p, o.va, vo, delta, t * d, d);
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

  /**
   * Backward of the strided extra keys of one (batch, head), per residue class with GEMMs
   * (accumulates).
   */
  private static void strideBackward(
      Geometry g,
      BlockLayout layout,
      double scale,
      int bh,
      Operands o,
      long doAddr,
      double[] lseAll,
      double[] oa,
      double[] doa,
      long[] gradAddr) {
    final int d = g.headDim;
    final int head = layout.layoutHead(bh % g.heads);
    final long base = (long) bh * g.seqLen;
    final NativeGemm blas = NativeGemm.of(g.type);
    int[] strides = layout.strides();
    for (int si = 0; si < strides.length; si++) {
      int st = strides[si];
      int nMax = residueLength(g.seqLen, st, 0);
      try (NativeGemm.Scratch sc = blas.scratch((long) nMax * nMax);
          NativeGemm.Scratch dsc = blas.scratch((long) nMax * nMax)) {
        for (int r = 0; r < Math.min(st, g.seqLen); r++) {
          int n = residueLength(g.seqLen, st, r);
          if (n < 2) {
            continue;
          }
          long first = (base + r) * d;
          int ld = st * d;
          blas.gemm(
              false,
              true,
              n,
              n,
              d,
              scale,
              blas.at(o.qAddr, first),
              ld,
              blas.at(o.kAddr, first),
              ld,
              0.0,
              sc.at(0),
              n);
          blas.gemm(
              false,
              true,
              n,
              n,
              d,
              1.0,
              blas.at(doAddr, first),
              ld,
              blas.at(o.vAddr, first),
              ld,
              0.0,
              dsc.at(0),
              n);
          double[] p = sc.read(n * n);
          double[] ds = dsc.read(n * n);
          boolean any = false;
          for (int a = 0; a < n; a++) {
            int i = r + a * st;
            int row = (int) (base + i);
            double di = dot(doa, row * d, oa, row * d, d);
            for (int c = 0; c < n; c++) {
              int idx = a * n + c;
              if (c < a && layout.isStrideExtra(head, si, i, r + c * st)) {
                double pv = Math.exp(p[idx] - lseAll[row]);
                p[idx] = pv;
                ds[idx] = pv * (ds[idx] - di);
                any = true;
              } else {
                p[idx] = 0;
                ds[idx] = 0;
              }
            }
          }
          if (!any) {
            continue;
          }
          sc.write(p, n * n);
          dsc.write(ds, n * n);
          // dQ_r += scale dS K_r ; dK_r += scale dS^T Q_r ; dV_r += P^T dO_r
          blas.gemm(
              false,
              false,
              n,
              d,
              n,
              scale,
              dsc.at(0),
              n,
              blas.at(o.kAddr, first),
              ld,
              1.0,
              blas.at(gradAddr[0], first),
              ld);
          blas.gemm(
              true,
              false,
              n,
              d,
              n,
              scale,
              dsc.at(0),
              n,
              blas.at(o.qAddr, first),
              ld,
              1.0,
              blas.at(gradAddr[1], first),
              ld);
          blas.gemm(
              true,
              false,
              n,
              d,
              n,
              1.0,
              sc.at(0),
              n,
              blas.at(doAddr, first),
              ld,
              1.0,
              blas.at(gradAddr[2], first),
              ld);
        }
      }
    }
  }

  /** Dot product of a[ao..ao+n) and b[bo..bo+n) with four independent accumulators. */
  private static double dot(double[] a, int ao, double[] b, int bo, int n) {
    double s0 = 0;
    double s1 = 0;
    double s2 = 0;
    double s3 = 0;
    int x = 0;
    for (; x + 3 < n; x += 4) {
      s0 += a[ao + x] * b[bo + x];
      s1 += a[ao + x + 1] * b[bo + x + 1];
      s2 += a[ao + x + 2] * b[bo + x + 2];
      s3 += a[ao + x + 3] * b[bo + x + 3];
    }
    for (; x < n; x++) {
      s0 += a[ao + x] * b[bo + x];
    }
    return (s0 + s1) + (s2 + s3);
  }

  /** y[yo..yo+n) += alpha * x[xo..xo+n). */
  private static void axpy(double alpha, double[] x, int xo, double[] y, int yo, int n) {
    for (int i = 0; i < n; i++) {
      y[yo + i] += alpha * x[xo + i];
    }
  }

  /** Backward pass from a {@link Result}. */
  public static Grads backward(
      INDArray q,
      INDArray k,
      INDArray v,
      Result fwd,
      INDArray dOut,
      BlockLayout layout,
      double scale) {
    if (fwd == null) {
      throw new IllegalArgumentException(
          "fwd=null; pass the Result of forward(q, k, v, layout, scale)");
    }
    return backward(q, k, v, fwd.out(), fwd.lse(), dOut, layout, scale);
  }

  /**
   * Backward pass from the forward output {@code out} and log-sum-exp {@code lse}; returns new
   * arrays.
   */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  public static Grads backward(
      INDArray q,
      INDArray k,
      INDArray v,
      INDArray out,
      INDArray lse,
      INDArray dOut,
      BlockLayout layout,
      double scale) {
    Geometry g = new Geometry(q, k, v, layout, scale);
    INDArray dq;
    INDArray dk;
    INDArray dv;
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      dq = Nd4j.create(g.type, g.batch, g.heads, g.seqLen, g.headDim);
      dk = Nd4j.create(g.type, g.batch, g.heads, g.seqLen, g.headDim);
      dv = Nd4j.create(g.type, g.batch, g.heads, g.seqLen, g.headDim);
    }
    backwardInto(q, k, v, out, lse, dOut, layout, scale, dq, dk, dv);
    return new Grads(dq, dk, dv);
  }

  /** Backward pass writing into caller-provided {@code dq, dk, dv} (overwritten). */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  public static void backwardInto(
      INDArray q,
      INDArray k,
      INDArray v,
      INDArray out,
      INDArray lse,
      INDArray dOut,
      BlockLayout layout,
      double scale,
      INDArray dq,
      INDArray dk,
      INDArray dv) {
    Geometry g = new Geometry(q, k, v, layout, scale);
    g.checkSame("out", out);
    g.checkSame("dOut", dOut);
    g.checkSame("dq", dq);
    g.checkSame("dk", dk);
    g.checkSame("dv", dv);
    if (lse == null || !Arrays.equals(lse.shape(), new long[] {g.batch, g.heads, g.seqLen})) {
      throw new IllegalArgumentException(
          "lse shape="
              + (lse == null ? "null" : Arrays.toString(lse.shape()))
              + "; expected ["
              + g.batch
              + ", "
              + g.heads
              + ", "
              + g.seqLen
              + "] from forward()");
    }
    checkFinite("dOut", dOut);
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      if (!NativeGemm.available()) {
        DenseFallback.backward(q, k, v, out, dOut, layout, scale, dq, dk, dv);
        return;
      }
      Operands o =
          new Operands(g, rows2d(q, g), rows2d(k, g), rows2d(v, g), layout.hasOtherExtras());
      INDArray do2 = rows2d(dOut.dataType() == g.type ? dOut : dOut.castTo(g.type), g);
      long doAddr = NativeGemm.address(do2);
      double[] lseAll = NativeGemm.toDoubles(lse.castTo(g.type).dup('c'));
      INDArray out2 = rows2d(out.dataType() == g.type ? out : out.castTo(g.type), g);
      // D_i = rowsum(dO o O) for every row at once; Java copies of O and dO only where strided or
      // extra keys
      // need them (converting both to double arrays cost ~4% of a gpt-mini training step)
      double[] diAll = NativeGemm.toDoubles(do2.mul(out2).sum(1));
      boolean javaRows = layout.strides().length > 0 || o.qa != null;
      double[] oa = javaRows ? NativeGemm.toDoubles(out2) : null;
      double[] doa = javaRows ? NativeGemm.toDoubles(do2) : null;
      // write straight into contiguous 'c' outputs (cleared first: dK and dV accumulate);
      // temporaries otherwise
      boolean direct = isDirect(dq, g) && isDirect(dk, g) && isDirect(dv, g);
      INDArray dq2 =
          direct
              ? dq.assign(0).reshape('c', g.rows(), g.headDim)
              : Nd4j.create(g.type, g.rows(), g.headDim);
      INDArray dk2 =
          direct
              ? dk.assign(0).reshape('c', g.rows(), g.headDim)
              : Nd4j.create(g.type, g.rows(), g.headDim);
      INDArray dv2 =
          direct
              ? dv.assign(0).reshape('c', g.rows(), g.headDim)
              : Nd4j.create(g.type, g.rows(), g.headDim);
      long[] gradAddr = {NativeGemm.address(dq2), NativeGemm.address(dk2), NativeGemm.address(dv2)};
      long work = 2 * g.rows() * g.headDim * (long) g.seqLen;
      AttentionThreads.parallelFor(
          g.batch * g.heads,
          work,
          bh -> backwardHead(g, layout, scale, bh, o, doAddr, lseAll, diAll, oa, doa, gradAddr));
      if (direct) {
        return;
      }
      long[] shape = {g.batch, g.heads, g.seqLen, g.headDim};
      dq.assign(dq2.reshape('c', shape));
      dk.assign(dk2.reshape('c', shape));
      dv.assign(dv2.reshape('c', shape));
    }
  }

  private static boolean isDirect(INDArray a, Geometry g) {
    return a.ordering() == 'c' && !a.isView() && a.dataType() == g.type;
  }

  private static void backwardHead(
      Geometry g,
      BlockLayout layout,
      double scale,
      int bh,
      Operands o,
      long doAddr,
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
    // element-wise contributions of the extra keys for this (batch, head) slice
    double[] dqX = null;
    double[] dkX = null;
    double[] dvX = null;
    int maxKeys = 0;
    for (int qb = 0; qb < nb; qb++) {
      maxKeys = Math.max(maxKeys, layout.keyBlocksNoCopy(head, qb).length * b);
    }
    try (NativeGemm.Scratch st = blas.scratch((long) maxKeys * b);
        NativeGemm.Scratch dpt = blas.scratch((long) maxKeys * b)) {
      for (int qb = 0; qb < nb; qb++) {
        int[] kb = layout.keyBlocksNoCopy(head, qb);
        int[] runs = runs(kb);
        int nk = kb.length * b;
        long qRow = base + (long) qb * b;
        long qAt = blas.at(o.qAddr, qRow * d);
        long doAt = blas.at(doAddr, qRow * d);
        int off = 0;
        for (int r = 0; r < runs.length; r += 2) {
          int len = runs[r + 1] * b;
          long kRow = base + (long) runs[r] * b;
          // S^T[run] = scale K_run Q_I^T ; dP^T[run] = V_run dO_I^T
          blas.gemm(
              false,
              true,
              len,
              b,
              d,
              scale,
              blas.at(o.kAddr, kRow * d),
              d,
              qAt,
              d,
              0.0,
              st.at((long) off * b),
              b);
          blas.gemm(
              false,
              true,
              len,
              b,
              d,
              1.0,
              blas.at(o.vAddr, kRow * d),
              d,
              doAt,
              d,
              0.0,
              dpt.at((long) off * b),
              b);
          off += len;
        }
        double[] p = st.read(nk * b);
        double[] ds = dpt.read(nk * b);
        int diagOff = nk - b;
        for (int t = 0; t < b; t++) {
          int i = qb * b + t;
          int row = (int) (base + i);
          double lseI = lseAll[row];
          double di = diAll[row]; // rowsum(dO * O)
          for (int c = 0; c < nk; c++) {
            int idx = c * b + t;
            boolean masked = c >= diagOff && (c - diagOff) > t;
            double pv = masked ? 0.0 : Math.exp(p[idx] - lseI);
            p[idx] = pv;
            ds[idx] = pv * (ds[idx] - di);
          }
          int[] ex = o.qa == null ? null : layout.otherExtrasNoCopy(head, i);
          if (ex != null && ex.length > 0) {
            if (dqX == null) {
              dqX = new double[T * d];
              dkX = new double[T * d];
              dvX = new double[T * d];
            }
            int qo = row * d;
            for (int e = 0; e < ex.length; e++) {
              int ko = (int) ((base + ex[e]) * d);
              int lo = ex[e] * d;
              double pe = Math.exp(dot(o.qa, qo, o.ka, ko, d) * scale - lseI);
              double dse = pe * (dot(doa, qo, o.va, ko, d) - di) * scale;
              axpy(dse, o.ka, ko, dqX, i * d, d);
              axpy(dse, o.qa, qo, dkX, lo, d);
              axpy(pe, doa, qo, dvX, lo, d);
            }
          }
        }
        st.write(p, nk * b);
        dpt.write(ds, nk * b);
        long dqAt = blas.at(dqAddr, qRow * d);
        off = 0;
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
              r == 0 ? 0.0 : 1.0,
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
    strideBackward(g, layout, scale, bh, o, doAddr, lseAll, oa, doa, gradAddr);
    if (dqX != null) {
      blas.addInto(blas.at(dqAddr, base * d), dqX, T * d);
      blas.addInto(blas.at(dkAddr, base * d), dkX, T * d);
      blas.addInto(blas.at(dvAddr, base * d), dvX, T * d);
    }
  }

  /**
   * Dense reference: {@code softmax(scale Q K^T + bias) V} with ND4J matmuls over full {@code T x
   * T} scores, where {@code bias} is 0 where {@link BlockLayout#isKept} and {@code -1e9} elsewhere.
   * O(T^2); for tests and benchmarks.
   */
  public static INDArray denseMasked(
      INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    Geometry g = new Geometry(q, k, v, layout, scale);
    INDArray bias = maskBias(layout, g.heads, g.type); // [H, T, T]
    INDArray s = Nd4j.matmul(q, k, false, true, false).muli(scale); // [B,H,T,T]
    for (int bi = 0; bi < g.batch; bi++) {
      s.get(NDArrayIndex.point(bi), NDArrayIndex.all(), NDArrayIndex.all(), NDArrayIndex.all())
          .addi(bias);
    }
    INDArray p = Nd4j.nn().softmax(s, 3);
    return Nd4j.matmul(p, v);
  }

  /** Additive mask {@code [heads, T, T]}: 0 where the layout computes the pair, -1e9 elsewhere. */
  public static INDArray maskBias(BlockLayout layout, int heads, DataType type) {
    int T = layout.seqLen();
    double[] m = new double[heads * T * T];
    for (int h = 0; h < heads; h++) {
      boolean[][] e = layout.elementMask(layout.layoutHead(h));
      for (int i = 0; i < T; i++) {
        for (int j = 0; j < T; j++) {
          m[(h * T + i) * T + j] = e[i][j] ? 0.0 : -1e9;
        }
      }
    }
    return Nd4j.create(m, new long[] {heads, T, T}, type);
  }
}
