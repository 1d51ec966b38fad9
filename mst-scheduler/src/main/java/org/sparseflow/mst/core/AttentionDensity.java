package org.sparseflow.mst.core;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Fraction of causal attention work a pattern needs, at block granularity (what a block-sparse
 * kernel computes): computed elements over T(T+1)/2. Component syntax (samediff-ops
 * AttentionPattern, union with '+'): {@code dense}, {@code local:W} (i−W &lt; j ≤ i), {@code
 * strided:S} ((i−j) mod S = 0), {@code fixed:L:C} (same L-block, or one of the last C columns of
 * each L-block), {@code global:N} (first N tokens attend and are attended), {@code random:R[:seed]}
 * (R extra blocks per row, counted as R blocks). A token pair is kept if any component keeps it; a
 * block is computed if any pair in it is kept; diagonal blocks count b(b+1)/2 elements. This is
 * mst-scheduler's own estimate for FLOP accounting; the kernels' {@code BlockLayout.density()} is
 * the authority when ops are available.
 */
public final class AttentionDensity {
  private static final Map<String, Double> CACHE = new ConcurrentHashMap<>();

  private AttentionDensity() {}

  static void check(String name, String pattern) {
    density(name, pattern, 64, 16);
  }

  public static double of(String pattern, int seqLen, int blockSize) {
    return CACHE.computeIfAbsent(
        pattern + "@" + seqLen + "/" + blockSize,
        k -> density("attention pattern", pattern, seqLen, blockSize));
  }

  private static double density(String name, String pattern, int t, int b) {
    String allowed =
        "'+'-joined components: dense, local:W, strided:S, fixed:L:C, global:N, random:R[:seed]";
    if (pattern == null || pattern.isBlank()) {
      throw Args.bad(name, pattern, allowed);
    }
    String[] comps = pattern.trim().toLowerCase(Locale.ROOT).split("\\+");
    int[][] spec = new int[comps.length][3];
    int randomBlocks = 0;
    for (int i = 0; i < comps.length; i++) {
      String[] p = comps[i].trim().split(":");
      try {
        switch (p[0]) {
          case "dense":
          case "all":
            return 1.0;
          case "local":
            spec[i] = new int[] {1, pos(p[1]), 0};
            break;
          case "strided":
            spec[i] = new int[] {2, pos(p[1]), 0};
            break;
          case "fixed":
            spec[i] = new int[] {3, pos(p[1]), pos(p[2])};
            break;
          case "global":
            spec[i] = new int[] {4, pos(p[1]), 0};
            break;
          case "random":
            spec[i] = new int[] {0, 0, 0};
            randomBlocks += pos(p[1]);
            break;
          default:
            throw Args.bad(name, pattern, allowed);
        }
      } catch (RuntimeException e) {
        if (e instanceof IllegalArgumentException
            && e.getMessage() != null
            && e.getMessage().startsWith(name)) {
          throw e;
        }
        throw Args.bad(name, pattern, allowed);
      }
    }
    int nb = (t + b - 1) / b;
    double computed = 0;
    for (int bi = 0; bi < nb; bi++) {
      int kept = 0;
      for (int bj = 0; bj <= bi; bj++) {
        if (blockKept(spec, bi, bj, b, t)) {
          kept++;
          computed += area(bi, bj, b, t);
        }
      }
      int extra = Math.min(randomBlocks, bi + 1 - kept);
      computed += (double) extra * b * b;
    }
    double causal = (double) t * (t + 1) / 2;
    return Math.min(1.0, computed / causal);
  }

  private static int pos(String s) {
    int v = Integer.parseInt(s.trim());
    if (v < 1) {
      throw new NumberFormatException();
    }
    return v;
  }

  private static double area(int bi, int bj, int b, int t) {
    int rows = Math.min(b, t - bi * b);
    int cols = Math.min(b, t - bj * b);
    return bi == bj ? rows * (rows + 1) / 2.0 : (double) rows * cols;
  }

  private static boolean blockKept(int[][] spec, int bi, int bj, int b, int t) {
    for (int i = bi * b; i < Math.min(t, (bi + 1) * b); i++) {
      for (int j = bj * b; j < Math.min(t, (bj + 1) * b) && j <= i; j++) {
        for (int[] c : spec) {
          if (kept(c, i, j)) {
            return true;
          }
        }
      }
    }
    return false;
  }

  private static boolean kept(int[] c, int i, int j) {
    switch (c[0]) {
      case 1:
        return i - j < c[1];
      case 2:
        return (i - j) % c[1] == 0;
      case 3:
        return j / c[1] == i / c[1] || j % c[1] >= c[1] - c[2];
      case 4:
        return j < c[1] || i < c[1];
      default:
        return false;
    }
  }
}
