package org.sparseflow.ops.matmul;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Arrays;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.sparseflow.ops.pattern.BlockMask;

/**
 * Block-sparse fp32 GEMMs on the JDK Vector API ({@link UnitStrideKernels} for the forward and dW,
 * {@link VectorMicroKernel} for dx): forward y = x (W o M), and the backward dx = dy (W o M)^T with
 * dW = x^T dy on kept blocks, fused so that each tile of dy is read once. The kept blocks are
 * packed first ({@link PackedBlocks}); the token dimension is split into tiles of a few dozen rows
 * that the Java threads take in turn, and each tile of the activations is copied once into a Java
 * array ({@link TileIo}; transposed for the forward), where a tile of the output is built for every
 * output panel before it is written back and probed for NaN in the same pass. So the
 * register-blocked micro-kernel sees long runs (every kept row of a block column) with no call
 * overhead, and no BLAS call or packing happens per block (see docs/experiments/kernels.md for what
 * this replaced and what was measured).
 *
 * <p>Loaded only when the {@code jdk.incubator.vector} module is present (see {@link
 * SparseKernelSelect}).
 */
final class VectorBlockKernels {

  private static final int L = VectorMicroKernel.L;

  /**
   * Token rows per forward tile: keeps a tile of x and of y (K and N up to ~4096) in L2; a multiple
   * of the 12-row micro-kernel.
   */
  private static final int TILE = Integer.getInteger("sparseflow.tileRows", 48);

  /**
   * Token rows per backward tile: longer tiles amortise the weight-gradient accumulators' loads and
   * stores, shorter ones keep the dy tile (rows x N floats) in L2; 64 measured 3-10 % faster than
   * 128 on one core (2 MB L2, N = 4096).
   */
  private static final int BACKWARD_TILE = Integer.getInteger("sparseflow.backwardTileRows", 64);

  /**
   * Row-tile chunks of the backward's dW/dBias sums (fixed, so results do not depend on threads).
   */
  private static final int REDUCTION_CHUNKS = 8;

  /**
   * Padding of tile rows (floats): rows of 1024 or 4096 floats would all map to the same L1 cache
   * sets, and the kernels read 8-64 rows at once.
   */
  private static final int PAD = 16;

  /** Slices of the dW chunk reduction that the kernel threads take in turn. */
  private static final int REDUCTION_SLICES = 16;

  private static final ThreadLocal<float[][]> BUFFERS =
      ThreadLocal.withInitial(
          () -> new float[][] {new float[0], new float[0], new float[0], new float[0]});

  private VectorBlockKernels() {}

  /** True when this kernel serves the block size (a multiple of the vector length). */
  static boolean supportsBlock(int b) {
    return b % L == 0;
  }

  /** y = x (W o M), overwriting y; returns whether y holds NaN (or a non-finite sum). */
  static boolean forward(INDArray x, INDArray w, BlockMask mask, INDArray y) {
    return forward(x, PackedBlocks.byColumn(TileIo.view(w), w.stride(0), w.stride(1), mask), y);
  }

  /** y = x W with W given as its kept blocks p, overwriting y; returns whether y holds NaN. */
  static boolean forward(INDArray x, PackedBlocks p, INDArray y) {
    int n = (int) x.size(0);
    int k = (int) x.size(1);
    int cols = (int) y.size(1);
    FloatBuffer xb = TileIo.view(x);
    FloatBuffer yb = TileIo.view(y);
    int tile = tileRows(n, TILE);
    int tiles = (n + tile - 1) / tile;
    // the x tile is stored transposed (column kk at a[kk * ldT]) for the unit-stride kernels
    int ldT = tile + PAD;
    int[][] idxT = scaledIndex(p, ldT);
    boolean[] nan = new boolean[BlockSparseKernels.threads()];
    // a row-major y (rows ld floats apart) is written by the storing kernels directly
    ByteBuffer direct = TileIo.storable(y) ? TileIo.bytes(y) : null;
    BlockSparseKernels.parallelFor(
        tiles,
        (worker, t) -> {
          int r0 = t * tile;
          int rows = Math.min(tile, n - r0);
          float[] a = buffer(0, k * ldT);
          TileIo.readRowsTransposed(
              xb,
              x.stride(0),
              x.stride(1),
              r0,
              rows,
              k,
              a,
              ldT,
              buffer(3, TileIo.TRANSPOSE_ROWS * k));
          if (direct != null) {
            int ld = (int) y.stride(0);
            nan[worker] |= multiplyInto(p, idxT, rows, a, direct, yb, r0 * ld, ld) != 0f;
            return;
          }
          float[] c = buffer(1, rows * (cols + PAD));
          Arrays.fill(c, 0, rows * (cols + PAD), 0f);
          multiplyTransposed(p, idxT, rows, a, c, cols + PAD);
          nan[worker] |= hasNaN(c, rows * (cols + PAD));
          TileIo.writeRows(yb, y.stride(0), y.stride(1), r0, rows, cols, c, cols + PAD);
        });
    return any(nan);
  }

  /**
   * dx = dy (W o M)^T (overwriting dx, when dx is not null) and dW = x^T dy on the kept blocks
   * (written into dW, whose other entries are left as they are, when dW is not null). Returns
   * whether dx and x (read only when dW is asked for) hold NaN; {@link Gradients#weight} is dW's
   * kept blocks in packed order.
   */
  static Gradients backward(
      INDArray x, INDArray w, BlockMask mask, INDArray dy, INDArray dx, INDArray dW, INDArray db) {
    PackedBlocks p = PackedBlocks.byColumn(TileIo.view(w), w.stride(0), w.stride(1), mask);
    Gradients g = backward(x, p, mask.blockRows(), dy, dx, dW != null, db);
    if (dW != null) {
      TileIo.writeBlocks(p, g.weight(), TileIo.view(dW), dW, mask.blockSize());
    }
    return g;
  }

  /**
   * What {@link #backward(INDArray, PackedBlocks, int, INDArray, INDArray, boolean, INDArray)}
   * returns: whether dx holds NaN, whether x does (probed on the tiles the weight gradient reads,
   * false when dW is not asked for), and dW of the kept blocks in p's packed order (null when not
   * asked for).
   */
  record Gradients(boolean inputNaN, boolean activationNaN, float[] weight) {}

  /**
   * The backward with W given as its kept blocks p (blockRows block rows): dx = dy W^T (overwriting
   * dx when not null), dBias (into db when not null) and, when {@code weightGrad}, dW = x^T dy on
   * the kept blocks, returned in p's packed order.
   */
  static Gradients backward(
      INDArray x,
      PackedBlocks p,
      int blockRows,
      INDArray dy,
      INDArray dx,
      boolean weightGrad,
      INDArray db) {
    int n = (int) dy.size(0);
    int cols = (int) dy.size(1);
    int k = blockRows * p.b;
    PackedBlocks pt = dx != null ? p.transpose(blockRows) : null;
    FloatBuffer dyb = TileIo.view(dy);
    FloatBuffer xb = weightGrad ? TileIo.view(x) : null;
    FloatBuffer dxb = dx != null ? TileIo.view(dx) : null;
    int tile = tileRows(n, BACKWARD_TILE);
    int tiles = (n + tile - 1) / tile;
    // dW and dBias are sums over the row tiles. Each of a fixed number of chunks of consecutive
    // tiles sums into its own buffer, and the chunks are added in order, so the result does not
    // depend on which thread ran which tile, nor on the thread count: training is bit-reproducible.
    int chunks = Math.min(tiles, REDUCTION_CHUNKS);
    float[][] acc = new float[chunks][];
    float[][] colSums = new float[chunks][];
    boolean[] nan = new boolean[chunks];
    boolean[] xNaN = new boolean[chunks];
    int[] rowIdx = new int[tile];
    for (int s = 0; s < tile; s++) {
      rowIdx[s] = s * (k + PAD);
    }
    BlockSparseKernels.parallelFor(
        chunks,
        (thread, chunk) -> {
          int t0 = (int) ((long) chunk * tiles / chunks);
          int t1 = (int) ((long) (chunk + 1) * tiles / chunks);
          for (int t = t0; t < t1; t++) {
            int r0 = t * tile;
            int rows = Math.min(tile, n - r0);
            float[] g = buffer(0, rows * (cols + PAD));
            TileIo.readRows(dyb, dy.stride(0), dy.stride(1), r0, rows, cols, g, cols + PAD);
            if (db != null) {
              if (colSums[chunk] == null) {
                colSums[chunk] = new float[cols];
              }
              VectorMicroKernel.addRows(g, rows, cols, cols + PAD, colSums[chunk]);
            }
            if (dx != null) {
              float[] c = buffer(1, rows * (k + PAD));
              Arrays.fill(c, 0, rows * (k + PAD), 0f);
              multiply(pt, rows, g, cols + PAD, c, k + PAD);
              nan[chunk] |= hasNaN(c, rows * (k + PAD));
              TileIo.writeRows(dxb, dx.stride(0), dx.stride(1), r0, rows, k, c, k + PAD);
            }
            if (weightGrad) {
              float[] a = buffer(2, rows * (k + PAD));
              TileIo.readRows(xb, x.stride(0), x.stride(1), r0, rows, k, a, k + PAD);
              // the tile is in cache now: a separate pass over x would be a serial 8 MB read
              xNaN[chunk] |= hasNaN(a, rows * (k + PAD));
              if (acc[chunk] == null) {
                acc[chunk] = new float[p.values.length];
              }
              weightGradTile(p, rows, a, g, cols + PAD, rowIdx, acc[chunk]);
            }
          }
        });
    float[] sum = weightGrad ? reduceChunks(acc, p.values.length) : null;
    if (db != null) {
      float[] total = new float[cols];
      for (float[] part : colSums) {
        if (part != null) {
          for (int i = 0; i < cols; i++) {
            total[i] += part[i];
          }
        }
      }
      FloatBuffer dbb = TileIo.view(db.reshape(1, cols));
      long stride = db.reshape(1, cols).stride(1);
      for (int i = 0; i < cols; i++) {
        dbb.put((int) (i * stride), total[i]);
      }
    }
    return new Gradients(any(nan), any(xNaN), sum);
  }

  /**
   * The chunk sums added in chunk order (so the result is the same for any thread count), in slices
   * on the kernel threads: done serially, this was ~1.5 ms of one idle core per backward at N =
   * 2048, K = 1024, M = 4096, density 0.1.
   */
  private static float[] reduceChunks(float[][] acc, int length) {
    float[] first = null;
    int parts = 0;
    for (float[] part : acc) {
      if (part != null) {
        parts++;
        if (first == null) {
          first = part;
        }
      }
    }
    if (first == null) {
      return new float[length];
    }
    if (parts == 1) {
      return first;
    }
    float[] sum = first;
    int slices = Math.min(REDUCTION_SLICES, Math.max(1, length / 4096));
    BlockSparseKernels.parallelFor(
        slices,
        (worker, s) -> {
          int from = (int) ((long) s * length / slices);
          int to = (int) ((long) (s + 1) * length / slices);
          boolean skip = true; // the first part is the running sum
          for (float[] part : acc) {
            if (part == null) {
              continue;
            }
            if (skip) {
              skip = false;
              continue;
            }
            VectorMicroKernel.addInto(part, sum, from, to);
          }
        });
    return sum;
  }

  /** Per panel of p, its source indices times ld (the offsets of those columns in a tile). */
  private static int[][] scaledIndex(PackedBlocks p, int ld) {
    int[][] out = new int[p.panels()][];
    for (int q = 0; q < out.length; q++) {
      int[] src = p.idx[q];
      int[] dst = new int[src.length];
      for (int s = 0; s < src.length; s++) {
        dst[s] = src[s] * ld;
      }
      out[q] = dst;
    }
    return out;
  }

  /**
   * c [rows x cCols] += A times the packed panels, where A [rows x K] is stored transposed in aT
   * (element (r, kk) at aT[kk * ld + r]) and idxT holds each panel's source indices times ld.
   */
  private static void multiplyTransposed(
      PackedBlocks p, int[][] idxT, int rows, float[] aT, float[] c, int cCols) {
    int b = p.b;
    int nv = b % (2 * L) == 0 ? 2 : 1;
    for (int q = 0; q < p.panels(); q++) {
      int len = p.start[q + 1] - p.start[q];
      if (len == 0) {
        continue;
      }
      for (int c0 = 0; c0 < b; c0 += nv * L) {
        UnitStrideKernels.rows(
            rows, nv, aT, 0, idxT[q], len, p.values, p.start[q] * b + c0, b, c, q * b + c0, cCols);
      }
    }
  }

  /**
   * y rows [rows] starting at float index yOff (rows ld apart) = A times the packed panels, with A
   * stored transposed as in {@link #multiplyTransposed}: the storing kernels write every kept
   * panel's columns straight into y, and the columns of panels without kept blocks are zeroed.
   * Returns the kernels' probe sum (not 0 when y got a NaN or an infinity).
   */
  private static float multiplyInto(
      PackedBlocks p,
      int[][] idxT,
      int rows,
      float[] aT,
      ByteBuffer y,
      FloatBuffer yFloats,
      int yOff,
      int ld) {
    int b = p.b;
    int nv = b % (2 * L) == 0 ? 2 : 1;
    float probe = 0f;
    for (int q = 0; q < p.panels(); q++) {
      int len = p.start[q + 1] - p.start[q];
      if (len == 0) {
        zeroColumns(yFloats, yOff + q * b, rows, ld, b);
        continue;
      }
      for (int c0 = 0; c0 < b; c0 += nv * L) {
        probe +=
            UnitStrideKernels.rowsStore(
                rows,
                nv,
                aT,
                0,
                idxT[q],
                len,
                p.values,
                p.start[q] * b + c0,
                b,
                y,
                yOff + q * b + c0,
                ld);
      }
    }
    return probe;
  }

  /**
   * c [rows x cCols] += a [rows x aCols] times the packed panels: panel p writes columns p*b ..
   * p*b+b of c and reads the columns idx[p] of a.
   */
  private static void multiply(
      PackedBlocks p, int rows, float[] a, int aCols, float[] c, int cCols) {
    int b = p.b;
    int nv = b % (2 * L) == 0 ? 2 : 1;
    for (int q = 0; q < p.panels(); q++) {
      int len = p.start[q + 1] - p.start[q];
      if (len == 0) {
        continue;
      }
      for (int c0 = 0; c0 < b; c0 += nv * L) {
        StridedKernels.rows(
            rows,
            nv,
            a,
            0,
            aCols,
            p.idx[q],
            len,
            p.values,
            p.start[q] * b + c0,
            b,
            c,
            q * b + c0,
            cCols);
      }
    }
  }

  /** Zeroes width floats in each of rows rows (ld apart) from float index off. */
  private static void zeroColumns(FloatBuffer out, int off, int rows, int ld, int width) {
    float[] zeros = buffer(3, width);
    Arrays.fill(zeros, 0, width, 0f);
    for (int r = 0; r < rows; r++) {
      out.put(off + r * ld, zeros, 0, width);
    }
  }

  /**
   * acc (packed like p) += x_tile^T dy_tile on every kept block: block (i, j) row r, column c is
   * the sum over the tile's rows t of x[t, i*b + r] dy[t, j*b + c].
   */
  private static void weightGradTile(
      PackedBlocks p, int rows, float[] x, float[] dy, int dyLd, int[] rowIdx, float[] acc) {
    int b = p.b;
    int nv = b % (2 * L) == 0 ? 2 : 1;
    for (int j = 0; j < p.panels(); j++) {
      for (int q = 0; q < p.other[j].length; q++) {
        int i = p.other[j][q];
        int base = (p.start[j] + q * b) * b;
        for (int c0 = 0; c0 < b; c0 += nv * L) {
          // C rows are the b rows of the block (A = x^T: row r is x column i*b + r, stride 1)
          UnitStrideKernels.rows(
              b, nv, x, i * b, rowIdx, rows, dy, j * b + c0, dyLd, acc, base + c0, b);
        }
      }
    }
  }

  // ------------------------------------------------------------------ memory

  /** Tile height: TILE rows, fewer when that leaves a thread without a tile. */
  private static int tileRows(int n, int maxTile) {
    int threads = BlockSparseKernels.threads();
    int tile = maxTile;
    while (tile > 8 && (n + tile - 1) / tile < 2 * threads) {
      tile /= 2;
    }
    return tile;
  }

  private static float[] buffer(int slot, int size) {
    float[][] bufs = BUFFERS.get();
    if (bufs[slot].length < size) {
      bufs[slot] = new float[size];
    }
    return bufs[slot];
  }

  /** NaN (or an infinity, which callers confirm) anywhere in a[0 .. n). */
  private static boolean hasNaN(float[] a, int n) {
    return VectorMicroKernel.nonFinite(a, n);
  }

  private static boolean any(boolean[] flags) {
    for (boolean f : flags) {
      if (f) {
        return true;
      }
    }
    return false;
  }
}
