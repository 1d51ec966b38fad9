package org.sparseflow.ops.attention;

import java.util.Arrays;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.matmul.BlockSparseKernels;

/**
 * Causal block-sparse softmax attention in Java over ND4J arrays (forward and backward).
 *
 * <p>Inputs {@code q, k, v} have shape {@code [batch, heads, T, headDim]} and one floating type.
 * For each (batch, head, query block {@code I}) the scores of the kept key tiles are computed with
 * one GEMM per run of consecutive kept tiles ({@code S^T = K_run Q_I^T}), the causal mask is
 * applied inside the diagonal tile, the scores of the layout's exact extra keys are added, the row
 * softmax over all of them is taken (its log-sum-exp is stored for the backward pass) and {@code
 * O_I = sum_runs P_run V_run} is again one GEMM per run (in fp32 with the vector module: Java
 * micro-kernels instead of the GEMMs). Extra keys on a stride ({@code strided:s}): with the Java
 * micro-kernels per query block inside them, joining the tiles' softmax ({@link StridedBlocks});
 * otherwise before the tiles for the scores and after them for {@code P V}, in fp32 with the vector
 * module pair by pair ({@link StridedVectorKernel}), else per residue class {@code r, r+s, ...}
 * with small GEMMs of leading dimension {@code s*D}; other extra keys (fixed summary columns,
 * partial global block) with per-row dot products. Work is therefore proportional to the kept tiles
 * plus the extra keys, never to {@code T^2}. The BLAS calls go straight to OpenBLAS on the arrays'
 * native memory ({@link NativeGemm}); on other backends an O(T^2) ND4J implementation with the same
 * mask runs instead ({@link DenseFallback}).
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
  public record Result(INDArray out, INDArray lse) {}

  /** Gradients with respect to q, k and v, each {@code [B,H,T,D]}. */
  public record Grads(INDArray dq, INDArray dk, INDArray dv) {}

  /** {@code 1 / sqrt(headDim)}. */
  public static double defaultScale(long headDim) {
    if (headDim <= 0) {
      throw new IllegalArgumentException("headDim=" + headDim + " must be > 0");
    }
    return 1.0 / Math.sqrt(headDim);
  }

  /**
   * Throws IllegalArgumentException if {@code a} holds NaN or infinity (names the first bad index).
   */
  static void checkFinite(String name, INDArray a) {
    double s = BlockSparseKernels.probeSum(a);
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
  static INDArray rows2d(INDArray a, AttentionGeometry g) {
    INDArray c = (a.ordering() == 'c' && !a.isView()) ? a : a.dup('c');
    return c.reshape('c', g.rows(), g.headDim);
  }

  /** Computes the forward pass into new arrays. */
  @SuppressWarnings("try") // the workspace scope is entered for its side effect only
  public static Result forward(
      INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    AttentionGeometry g = new AttentionGeometry(q, k, v, layout, scale);
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
    AttentionGeometry g = new AttentionGeometry(q, k, v, layout, scale);
    g.checkSame("out", out);
    g.checkLse(lse, "");
    checkFinite("q", q);
    checkFinite("k", k);
    checkFinite("v", v);
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      if (!NativeGemm.available()) {
        DenseFallback.forward(q, k, v, layout, scale, out, lse);
        return;
      }
      AttentionOperands o =
          new AttentionOperands(
              g, rows2d(q, g), rows2d(k, g), rows2d(v, g), layout.hasOtherExtras());
      boolean direct = out.ordering() == 'c' && !out.isView() && out.dataType() == g.type;
      INDArray out2 =
          direct ? out.reshape('c', g.rows(), g.headDim) : Nd4j.create(g.type, g.rows(), g.headDim);
      long outAddr = NativeGemm.address(out2);
      double[] lseAll = new double[(int) g.rows()];
      // one BLAS thread switch for all phases (the result must not depend on BLAS's threads)
      AttentionThreads.exclusive(
          () -> AttentionForwardKernel.forwardPhases(g, layout, scale, o, outAddr, lseAll));
      if (!direct) {
        out.assign(out2.reshape('c', g.batch, g.heads, g.seqLen, g.headDim));
      }
      lse.assign(NativeGemm.fromDoubles(lseAll, new long[] {g.batch, g.heads, g.seqLen}, g.type));
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
    AttentionGeometry g = new AttentionGeometry(q, k, v, layout, scale);
    INDArray dq;
    INDArray dk;
    INDArray dv;
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      // uninitialised: backwardInto overwrites them (zeroing them here too cost a memory pass)
      dq = Nd4j.createUninitialized(g.type, g.batch, g.heads, g.seqLen, g.headDim);
      dk = Nd4j.createUninitialized(g.type, g.batch, g.heads, g.seqLen, g.headDim);
      dv = Nd4j.createUninitialized(g.type, g.batch, g.heads, g.seqLen, g.headDim);
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
    AttentionGeometry g = new AttentionGeometry(q, k, v, layout, scale);
    g.checkSame("out", out);
    g.checkSame("dOut", dOut);
    g.checkSame("dq", dq);
    g.checkSame("dk", dk);
    g.checkSame("dv", dv);
    g.checkLse(lse, " from forward()");
    checkFinite("dOut", dOut);
    try (MemoryWorkspace ws = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
      if (!NativeGemm.available()) {
        DenseFallback.backward(q, k, v, out, dOut, layout, scale, dq, dk, dv);
        return;
      }
      AttentionOperands o =
          new AttentionOperands(
              g, rows2d(q, g), rows2d(k, g), rows2d(v, g), layout.hasOtherExtras());
      INDArray do2 = rows2d(dOut.dataType() == g.type ? dOut : dOut.castTo(g.type), g);
      long doAddr = NativeGemm.address(do2);
      double[] lseAll = NativeGemm.toDoubles(lse.castTo(g.type).dup('c'));
      INDArray out2 = rows2d(out.dataType() == g.type ? out : out.castTo(g.type), g);
      // D_i = rowsum(dO o O): in fp32 per head inside the parallel loop (one serial pass over O
      // and dO before it cost ~1 ms per call at T = 2048, 8 heads); in double with ND4J up front
      boolean diPerHead = g.type == DataType.FLOAT;
      double[] diAll =
          diPerHead ? new double[(int) g.rows()] : NativeGemm.toDoubles(do2.mul(out2).sum(1));
      long outRowsAddr = diPerHead ? NativeGemm.address(out2) : 0L;
      boolean javaRows =
          o.qa != null
              || layout.strides().length > 0 && !AttentionBackwardKernel.vectorStrides(g, layout);
      double[] oa = javaRows ? NativeGemm.toDoubles(out2) : null;
      double[] doa = javaRows ? NativeGemm.toDoubles(do2) : null;
      // write straight into contiguous 'c' outputs, temporaries otherwise; never cleared here: the
      // kernel overwrites dQ and clears each head's dK and dV slices itself (in parallel; a serial
      // ND4J assign(0) of all three cost ~6 ms per call at T = 2048, 8 heads)
      boolean direct = isDirect(dq, g) && isDirect(dk, g) && isDirect(dv, g);
      INDArray dq2 = gradRows(dq, direct, g);
      INDArray dk2 = gradRows(dk, direct, g);
      INDArray dv2 = gradRows(dv, direct, g);
      long[] gradAddr = {NativeGemm.address(dq2), NativeGemm.address(dk2), NativeGemm.address(dv2)};
      long work = 2 * g.rows() * g.headDim * (long) g.seqLen;
      AttentionThreads.parallelFor(
          g.batch * g.heads,
          work,
          bh ->
              AttentionBackwardKernel.backwardHead(
                  g, layout, scale, bh, o, doAddr, outRowsAddr, lseAll, diAll, oa, doa, gradAddr));
      if (direct) {
        return;
      }
      long[] shape = {g.batch, g.heads, g.seqLen, g.headDim};
      dq.assign(dq2.reshape('c', shape));
      dk.assign(dk2.reshape('c', shape));
      dv.assign(dv2.reshape('c', shape));
    }
  }

  /** The [rows, D] array a gradient is written to: {@code grad} itself when direct, else new. */
  private static INDArray gradRows(INDArray grad, boolean direct, AttentionGeometry g) {
    return direct
        ? grad.reshape('c', g.rows(), g.headDim)
        : Nd4j.createUninitialized(g.type, g.rows(), g.headDim);
  }

  static boolean isDirect(INDArray a, AttentionGeometry g) {
    return a.ordering() == 'c' && !a.isView() && a.dataType() == g.type;
  }

  /**
   * Dense reference: {@code softmax(scale Q K^T + bias) V} with ND4J matmuls over full {@code T x
   * T} scores, where {@code bias} is 0 where {@link BlockLayout#isKept} and {@code -1e9} elsewhere.
   * O(T^2); for tests and benchmarks.
   */
  public static INDArray denseMasked(
      INDArray q, INDArray k, INDArray v, BlockLayout layout, double scale) {
    AttentionGeometry g = new AttentionGeometry(q, k, v, layout, scale);
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
