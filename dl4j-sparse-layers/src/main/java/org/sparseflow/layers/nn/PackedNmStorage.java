package org.sparseflow.layers.nn;

import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Packed storage ({@link PackedStorage#PACKED}) for N:M patterns. The weight param W is the kept
 * values [nIn / m * n, nOut] (see {@link PackedNmLayout}); the positions of the kept weights inside
 * their groups are the layout: 1 to 8 bits per kept weight (2 bits for m <= 4) in int words, held
 * in the layer configuration's {@code blockLayout} array like the block patterns' kept-block
 * indices. They are configuration, not a param: DL4J params are floating point and would get a
 * gradient and optimizer state, and the layout is fixed for the life of the layer.
 */
final class PackedNmStorage {
  private PackedNmStorage() {}

  /** The validated (or seeded random) index words of a packed n:m weight [nIn, nOut]. */
  static int[] resolve(
      String layerName, PatternSpec p, long nIn, long nOut, int[] words, long seed) {
    String where = LayerValidation.where(layerName);
    if (words == null) {
      NMMask m = (NMMask) p.random(nIn, nOut, p.fixedDensity(), seed);
      return PackedNmLayout.of(m).indexWords();
    }
    try {
      return PackedNmLayout.validated(nIn, nOut, p.getN(), p.getM(), words);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          where + "blockLayout (n:m index words): " + e.getMessage(), e);
    }
  }

  /** The n:m layout of a packed configuration, or null when its pattern is not n:m. */
  static PackedNmLayout layout(MaskedLinearConf c) {
    PatternSpec p = SparseKernels.parsePattern("pattern", c.getPattern());
    if (!c.packedStorage() || p.getN() == 0) {
      return null;
    }
    return PackedNmLayout.of(c.getNIn(), c.getNOut(), p.getN(), p.getM(), c.getBlockLayout());
  }

  /** Whether a pattern string names an n:m pattern. */
  static boolean isNm(String pattern) {
    return pattern != null && SparseKernels.parsePattern("pattern", pattern).getN() > 0;
  }
}
