package org.sparseflow.ops.attention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * Builds {@link BlockLayout}s: from an {@link AttentionPattern} (kept tiles per head, and the exact
 * extra keys of strided, fixed and global components that fall outside the kept tiles), or from
 * explicit per-head tile grids. Checks the geometry first.
 */
final class BlockLayoutFactory {
  private BlockLayoutFactory() {}

  static void checkGeometry(int seqLen, int blockSize, int numHeads) {
    if (blockSize <= 0) {
      throw new IllegalArgumentException("blockSize=" + blockSize + " must be > 0");
    }
    if (seqLen <= 0) {
      throw new IllegalArgumentException("seqLen=" + seqLen + " must be > 0");
    }
    if (seqLen % blockSize != 0) {
      throw new IllegalArgumentException(
          "seqLen="
              + seqLen
              + " must be a multiple of blockSize="
              + blockSize
              + " (pad the sequence or choose a block size dividing it)");
    }
    if (numHeads <= 0) {
      throw new IllegalArgumentException("numHeads=" + numHeads + " must be > 0");
    }
  }

  static BlockLayout of(AttentionPattern pattern, int seqLen, int blockSize, int numHeads) {
    if (pattern == null) {
      throw new IllegalArgumentException(
          "pattern=null; expected an AttentionPattern such as 'dense'");
    }
    checkGeometry(seqLen, blockSize, numHeads);
    int nb = seqLen / blockSize;
    boolean[][] base = new boolean[nb][nb];
    List<AttentionPattern.Component> extraComponents = new ArrayList<>();
    List<AttentionPattern.Component> randoms = new ArrayList<>();
    for (int i = 0; i < nb; i++) {
      base[i][i] = true;
    }
    for (AttentionPattern.Component c : pattern.getComponents()) {
      int s = c.getSize();
      switch (c.getKind()) {
        case DENSE:
          for (int i = 0; i < nb; i++) {
            Arrays.fill(base[i], 0, i + 1, true);
          }
          break;
        case LOCAL:
          // first allowed key of the block's first row is I*b - W + 1
          for (int i = 0; i < nb; i++) {
            int first = Math.max(0, Math.floorDiv(i * blockSize - s + 1, blockSize));
            Arrays.fill(base[i], first, i + 1, true);
          }
          break;
        case FIXED:
          // own segment: keys from the segment start of the block's first row
          for (int i = 0; i < nb; i++) {
            int segStart = (i * blockSize / s) * s;
            Arrays.fill(base[i], segStart / blockSize, i + 1, true);
          }
          extraComponents.add(c);
          break;
        case GLOBAL:
          {
            int fullBlocks = s / blockSize;
            for (int i = 0; i < nb; i++) {
              Arrays.fill(base[i], 0, Math.min(i + 1, fullBlocks), true);
            }
            if (s % blockSize != 0) {
              extraComponents.add(c);
            }
            break;
          }
        case STRIDED:
          extraComponents.add(c);
          break;
        case RANDOM:
          randoms.add(c);
          break;
        default:
          throw new IllegalStateException(c.getKind().toString());
      }
    }
    boolean[][][] perHead = new boolean[numHeads][][];
    for (int h = 0; h < numHeads; h++) {
      if (randoms.isEmpty()) {
        perHead[h] = base;
        continue;
      }
      boolean[][] g = new boolean[nb][];
      for (int i = 0; i < nb; i++) {
        g[i] = base[i].clone();
      }
      for (AttentionPattern.Component r : randoms) {
        // one generator per (seed, head); query blocks drawn in order -> deterministic
        Random rng = new Random(r.getSeed() * 0x9E3779B97F4A7C15L + h * 0xBF58476D1CE4E5B9L + 1);
        for (int i = 1; i < nb; i++) {
          int want = Math.min(r.getSize(), i);
          int[] cand = new int[i];
          for (int j = 0; j < i; j++) {
            cand[j] = j;
          }
          for (int t = 0; t < want; t++) { // partial Fisher-Yates
            int pick = t + rng.nextInt(i - t);
            int tmp = cand[t];
            cand[t] = cand[pick];
            cand[pick] = tmp;
            g[i][cand[t]] = true;
          }
        }
      }
      perHead[h] = g;
    }
    int[][][] extras = new int[numHeads][][];
    for (int h = 0; h < numHeads; h++) {
      if (h > 0 && perHead[h] == perHead[h - 1]) {
        extras[h] = extras[h - 1];
        continue;
      }
      extras[h] = buildExtras(extraComponents, perHead[h], seqLen, blockSize);
    }
    int[] strides =
        pattern.getComponents().stream()
            .filter(c -> c.getKind() == AttentionPattern.Kind.STRIDED)
            .mapToInt(AttentionPattern.Component::getSize)
            .distinct()
            .toArray();
    return new BlockLayout(seqLen, blockSize, perHead, extras, strides, pattern.toString());
  }

  private static int[][] buildExtras(
      List<AttentionPattern.Component> comps, boolean[][] g, int seqLen, int b) {
    int[][] out = new int[seqLen][];
    int[] empty = new int[0];
    TreeSet<Integer> keys = new TreeSet<>();
    for (int i = 0; i < seqLen; i++) {
      keys.clear();
      boolean[] row = g[i / b];
      for (AttentionPattern.Component c : comps) {
        int s = c.getSize();
        switch (c.getKind()) {
          case STRIDED:
            for (int j = i - s; j >= 0; j -= s) {
              if (!row[j / b]) {
                keys.add(j);
              }
            }
            break;
          case FIXED:
            for (int seg = 0; seg * s <= i; seg++) {
              for (int j = seg * s + s - c.getSummary(); j < seg * s + s && j <= i; j++) {
                if (j >= 0 && !row[j / b]) {
                  keys.add(j);
                }
              }
            }
            break;
          case GLOBAL:
            for (int j = 0; j < s && j <= i; j++) {
              if (!row[j / b]) {
                keys.add(j);
              }
            }
            break;
          default:
            throw new IllegalStateException(c.getKind().toString());
        }
      }
      if (keys.isEmpty()) {
        out[i] = empty;
      } else {
        out[i] = keys.stream().mapToInt(Integer::intValue).toArray();
      }
    }
    return out;
  }

  static BlockLayout fromBlocks(boolean[][][] grids, int seqLen, int blockSize) {
    if (grids == null || grids.length == 0) {
      throw new IllegalArgumentException(
          "grids must hold at least one head; got " + (grids == null ? "null" : "0 heads"));
    }
    checkGeometry(seqLen, blockSize, grids.length);
    int nb = seqLen / blockSize;
    boolean[][][] copy = new boolean[grids.length][nb][nb];
    for (int h = 0; h < grids.length; h++) {
      if (grids[h] == null || grids[h].length != nb) {
        throw new IllegalArgumentException(
            "grids["
                + h
                + "] has "
                + (grids[h] == null ? "null" : grids[h].length)
                + " rows; expected nb=seqLen/blockSize="
                + nb);
      }
      for (int i = 0; i < nb; i++) {
        if (grids[h][i] == null || grids[h][i].length != nb) {
          throw new IllegalArgumentException(
              "grids[" + h + "][" + i + "] must have length nb=" + nb);
        }
        for (int j = 0; j < nb; j++) {
          if (grids[h][i][j] && j > i) {
            throw new IllegalArgumentException(
                "grids["
                    + h
                    + "]["
                    + i
                    + "]["
                    + j
                    + "]=true violates causality; only key blocks J <= I are allowed");
          }
          copy[h][i][j] = grids[h][i][j] || i == j;
        }
      }
    }
    int[][][] extras = new int[grids.length][seqLen][];
    for (int h = 0; h < grids.length; h++) {
      for (int i = 0; i < seqLen; i++) {
        extras[h][i] = new int[0];
      }
    }
    return new BlockLayout(seqLen, blockSize, copy, extras, new int[0], "custom");
  }
}
