package org.sparseflow.mst.core;

/**
 * Tiny seeded PRNG whose whole state is one {@code long}, so it can be saved with the model and
 * restored exactly (Steele, Lea &amp; Flood 2014, "Fast splittable pseudorandom number generators";
 * the SplitMix64 finaliser constants are from that paper).
 */
public final class SplitMix64 {
  private long state;

  public SplitMix64(long seed) {
    this.state = seed;
  }

  public long state() {
    return state;
  }

  public void setState(long state) {
    this.state = state;
  }

  public long nextLong() {
    long z = (state += 0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Uniform in [0, 1). */
  public double nextDouble() {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }

  /** Uniform in [0, bound). */
  public int nextInt(int bound) {
    if (bound <= 0) {
      throw Args.bad("bound", bound, "an integer >= 1");
    }
    return (int) Math.floorMod(nextLong() >>> 1, (long) bound);
  }

  /** Partial Fisher-Yates: the first k entries of {@code a} become a uniform random k-subset. */
  public void shuffleFirst(int[] a, int len, int k) {
    for (int i = 0; i < Math.min(k, len); i++) {
      int j = i + nextInt(len - i);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}
