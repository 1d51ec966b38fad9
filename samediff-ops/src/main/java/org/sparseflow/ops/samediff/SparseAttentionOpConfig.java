package org.sparseflow.ops.samediff;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;

/**
 * Configuration of the sparse attention ops encoded as integer arguments (iArgs survive
 * FlatBuffers, i.e. {@code sd.save()/SameDiff.load()} and SameDiff's gradient cloning): {@code
 * [blockSize, doubleToLongBits(scale), numComponents, (kind ordinal, size, summary, seed) * n]}.
 * Layouts are cached per (pattern, T, blockSize, heads).
 */
final class SparseAttentionOpConfig {

  private static final int MAX_CACHED_LAYOUTS = 64;
  private static final Map<String, BlockLayout> LAYOUTS = new LinkedHashMap<>(16, 0.75f, true);

  final AttentionPattern pattern;
  final int blockSize;
  final double scale;

  SparseAttentionOpConfig(AttentionPattern pattern, int blockSize, double scale) {
    if (pattern == null) {
      throw new IllegalArgumentException(
          "pattern=null; allowed: an AttentionPattern such as 'dense' or 'local:128'");
    }
    if (blockSize <= 0) {
      throw new IllegalArgumentException("blockSize=" + blockSize + " must be > 0");
    }
    if (!(scale > 0) || Double.isInfinite(scale)) {
      throw new IllegalArgumentException("scale=" + scale + " must be a finite number > 0");
    }
    this.pattern = pattern;
    this.blockSize = blockSize;
    this.scale = scale;
  }

  long[] toIArgs() {
    List<AttentionPattern.Component> comps = pattern.getComponents();
    long[] a = new long[3 + 4 * comps.size()];
    a[0] = blockSize;
    a[1] = Double.doubleToLongBits(scale);
    a[2] = comps.size();
    for (int i = 0; i < comps.size(); i++) {
      AttentionPattern.Component c = comps.get(i);
      a[3 + 4 * i] = c.getKind().ordinal();
      a[4 + 4 * i] = c.getSize();
      a[5 + 4 * i] = c.getSummary();
      a[6 + 4 * i] = c.getSeed();
    }
    return a;
  }

  static SparseAttentionOpConfig fromIArgs(long[] a, String opName) {
    if (a == null || a.length < 3 || a.length != 3 + 4 * a[2]) {
      throw new IllegalStateException(
          opName + ": malformed integer arguments " + (a == null ? "null" : Arrays.toString(a)));
    }
    AttentionPattern.Kind[] kinds = AttentionPattern.Kind.values();
    List<AttentionPattern.Component> comps = new ArrayList<>();
    for (int i = 0; i < a[2]; i++) {
      comps.add(
          new AttentionPattern.Component(
              kinds[(int) a[3 + 4 * i]], (int) a[4 + 4 * i], (int) a[5 + 4 * i], a[6 + 4 * i]));
    }
    return new SparseAttentionOpConfig(
        new AttentionPattern(comps), (int) a[0], Double.longBitsToDouble(a[1]));
  }

  /** Cached layout for these dimensions; seqLen must be a multiple of blockSize. */
  BlockLayout layout(int seqLen, int heads) {
    String key = pattern + "|" + seqLen + "|" + blockSize + "|" + heads;
    synchronized (LAYOUTS) {
      BlockLayout l = LAYOUTS.get(key);
      if (l != null) {
        return l;
      }
    }
    BlockLayout l = pattern.layout(seqLen, blockSize, heads);
    synchronized (LAYOUTS) {
      LAYOUTS.put(key, l);
      if (LAYOUTS.size() > MAX_CACHED_LAYOUTS) {
        LAYOUTS.remove(LAYOUTS.keySet().iterator().next());
      }
    }
    return l;
  }

  Map<String, Object> properties() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("pattern", pattern.toString());
    m.put("blockSize", blockSize);
    m.put("scale", scale);
    return m;
  }
}
