package org.sparseflow.layers.nn;

import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * The {@code storage} option of {@link SparseDenseLayer} and {@link SparseOutputLayer}.
 *
 * <ul>
 *   <li>{@value #MASKED} (default): W dense [nIn, nOut] plus a frozen dense 0/1 mask param M; MST
 *       and every mask tool work on it.
 *   <li>{@value #PACKED}: block and n:m patterns. The only weight param is the kept blocks' values,
 *       packed [keptBlocks * b, b] (see {@link PackedLayout}); the layout is a non-trainable int
 *       array in the layer configuration ({@code blockLayout}, row-major kept-block indices). The
 *       gradient and the optimizer state then cover only kept weights, and model files are
 *       proportional to density. MST changes the layout by index within {@code blockCapacity} block
 *       slots (spare slots hold zeros) and rebuilds the model when a phase needs more or fewer
 *       slots (see {@code org.sparseflow.layers.api.PackedModels}). For n:m patterns W is the kept
 *       values [nIn / m * n, nOut] and {@code blockLayout} holds their in-group offsets, 2 bits
 *       each for m <= 4 (see {@link PackedNmStorage}).
 * </ul>
 */
final class PackedStorage {
  private PackedStorage() {}

  static final String MASKED = "masked";
  static final String PACKED = "packed";

  static boolean isPacked(String storage) {
    return PACKED.equals(storage);
  }

  /** Checks storage; for packed storage returns the validated (or seeded random) block layout. */
  static int[] resolve(
      String layerName,
      String storage,
      String pattern,
      double density,
      long nIn,
      long nOut,
      int[] layout,
      long layoutSeed) {
    String where = LayerValidation.where(layerName);
    if (!MASKED.equals(storage) && !PACKED.equals(storage)) {
      throw new IllegalArgumentException(
          where + "storage = '" + storage + "' is not allowed; allowed: masked, packed");
    }
    if (!isPacked(storage)) {
      if (layout != null) {
        throw new IllegalArgumentException(
            where
                + "blockLayout is set with storage = masked; allowed: blockLayout only with"
                + " storage = packed");
      }
      return null;
    }
    PatternSpec p = SparseKernels.parsePattern("pattern", pattern);
    if (p.getKind() == MaskPattern.Kind.UNSTRUCTURED) {
      throw new IllegalArgumentException(
          where
              + "storage = packed with pattern = '"
              + pattern
              + "' is not supported; allowed: packed storage with block8|16|32|64 or n:m"
              + " patterns (use storage = masked for unstructured)");
    }
    if (nIn <= 0 || nOut <= 0) {
      throw new IllegalArgumentException(
          where
              + "storage = packed needs nIn and nOut at build time (nIn = "
              + nIn
              + ", nOut = "
              + nOut
              + "); allowed: both > 0");
    }
    if (p.getKind() == MaskPattern.Kind.NM) {
      return PackedNmStorage.resolve(layerName, p, nIn, nOut, layout, layoutSeed);
    }
    if (layout == null) {
      BlockMask m = (BlockMask) p.random(nIn, nOut, density, layoutSeed);
      return PackedLayout.of(m).keptRowMajor();
    }
    try {
      return PackedLayout.validated(nIn, nOut, p.getBlockSize(), layout);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + "blockLayout: " + e.getMessage(), e);
    }
  }

  /**
   * Checks a packed weight's block capacity: 0 (exactly the kept blocks) or from the kept blocks up
   * to all blocks of the [nIn, nOut] weight.
   */
  static void checkCapacity(String layerName, int capacity, int kept, long nIn, long nOut, int b) {
    long all = (nIn / b) * (nOut / b);
    if (capacity != 0 && (capacity < kept || capacity > all)) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerName)
              + "blockCapacity = "
              + capacity
              + " is not allowed for "
              + kept
              + " kept blocks of "
              + all
              + "; allowed: 0 (exactly the kept blocks) or "
              + kept
              + ".."
              + all);
    }
  }

  /**
   * Checks a new layout for a packed weight now laid out as {@code now} with {@code slots} block
   * slots: same shape and block size, at most {@code slots} kept blocks.
   */
  static void checkRelayout(String layerName, PackedLayout now, PackedLayout to, int slots) {
    if (to == null
        || to.rows() != now.rows()
        || to.cols() != now.cols()
        || to.blockSize() != now.blockSize()) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerName)
              + "layout = "
              + to
              + " does not fit; allowed: a layout of the same ["
              + now.rows()
              + ", "
              + now.cols()
              + "] weight in blocks of "
              + now.blockSize());
    }
    if (to.keptBlocks() > slots) {
      throw new IllegalArgumentException(
          LayerValidation.where(layerName)
              + "layout keeps "
              + to.keptBlocks()
              + " blocks but the packed weight has "
              + slots
              + " block slots; allowed: at most "
              + slots
              + " blocks (rebuild with more slots: PackedModels.withSlots)");
    }
  }

  /** The error for mask tools (MST, dense gradients, SparseParam) on a packed layer. */
  static String noMaskTools(String layerName) {
    return "layer '"
        + layerName
        + "' stores its weight packed (storage = packed): it has no mask param and computes no"
        + " dense gradient, so SparseParam mask edits and dense-gradient requests are not"
        + " supported; allowed: storage = masked for them, or SparseParams.findPacked to read,"
        + " write and relayout packed weights and to collect growth scores (what MST uses)";
  }

  /** The block layout of a packed layer configuration (null for n:m patterns). */
  static PackedLayout layout(MaskedLinearConf c) {
    if (PackedNmStorage.isNm(c.getPattern())) {
      return null;
    }
    return PackedLayout.of(
        c.getNIn(),
        c.getNOut(),
        SparseKernels.parsePattern("pattern", c.getPattern()).getBlockSize(),
        c.getBlockLayout());
  }

  /**
   * The packed layouts of the four attention projections (q, k, v, o; Wo has nOut rows): checks
   * storage, pattern and shapes; for packed storage returns the validated (or seeded random: seed +
   * i) layouts, else null.
   */
  static int[][] resolveProjections(
      String name,
      String storage,
      String pattern,
      double density,
      long nIn,
      long nOut,
      int[][] layouts,
      long seed) {
    boolean packed = isPacked(storage);
    if (packed && pattern == null) {
      throw new IllegalArgumentException(
          LayerValidation.where(name)
              + "projectionStorage = packed with projectionPattern = null; allowed: packed"
              + " storage with a block projectionPattern");
    }
    if (layouts != null && layouts.length != 4) {
      throw new IllegalArgumentException(
          LayerValidation.where(name)
              + "projectionLayouts has "
              + layouts.length
              + " entries; allowed: 4 (q, k, v, o)");
    }
    if (pattern == null) {
      resolve(name, storage, "unstructured", 1.0, 1, 1, null, 0);
      return layouts;
    }
    int[][] out = packed ? new int[4][] : null;
    for (int i = 0; i < 4; i++) {
      int[] r =
          resolve(
              name,
              storage,
              pattern,
              density,
              i == 3 ? nOut : nIn,
              nOut,
              layouts == null ? null : layouts[i],
              seed + i);
      if (out != null) {
        out[i] = r;
      }
    }
    return out;
  }

  /** A deep copy of per-projection layouts. */
  static int[][] copy(int[][] a) {
    int[][] c = new int[a.length][];
    for (int i = 0; i < a.length; i++) {
      c[i] = a[i] == null ? null : a[i].clone();
    }
    return c;
  }
}
