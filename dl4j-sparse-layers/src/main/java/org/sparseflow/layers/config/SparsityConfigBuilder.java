package org.sparseflow.layers.config;

import java.util.ArrayList;
import java.util.List;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * DL4J-style builder of a {@link SparsityConfig} ({@link SparsityConfig#builder()}); {@link
 * #build()} validates.
 */
public final class SparsityConfigBuilder {
  private final SparsityConfig c = new SparsityConfig();

  public SparsityConfigBuilder pattern(String pattern) {
    c.setPattern(pattern);
    return this;
  }

  /** {@value SparsityConfig#STORAGE_MASKED} (default) or {@value SparsityConfig#STORAGE_PACKED}. */
  public SparsityConfigBuilder storage(String storage) {
    c.setStorage(storage);
    return this;
  }

  public SparsityConfigBuilder sparsity(double sparsity) {
    c.setSparsity(sparsity);
    return this;
  }

  /** Convenience: sparsity = 1 - density. */
  public SparsityConfigBuilder density(double density) {
    c.setSparsity(1.0 - density);
    return this;
  }

  public SparsityConfigBuilder distribution(DensityDistribution d) {
    c.setDistribution(d);
    return this;
  }

  public SparsityConfigBuilder initialMask(InitialMask m) {
    c.setInitialMask(m);
    return this;
  }

  public SparsityConfigBuilder seed(long seed) {
    c.setSeed(seed);
    return this;
  }

  public SparsityConfigBuilder include(String... regexes) {
    c.setInclude(new ArrayList<>(List.of(regexes)));
    return this;
  }

  public SparsityConfigBuilder exclude(String... regexes) {
    c.setExclude(new ArrayList<>(List.of(regexes)));
    return this;
  }

  /** Adds to the default excludes instead of replacing them. */
  public SparsityConfigBuilder addExclude(String... regexes) {
    c.getExclude().addAll(List.of(regexes));
    return this;
  }

  public SparsityConfigBuilder keepFirstDense(boolean b) {
    c.setKeepFirstDense(b);
    return this;
  }

  public SparsityConfigBuilder keepLastDense(boolean b) {
    c.setKeepLastDense(b);
    return this;
  }

  public SparsityConfigBuilder attention(AttentionSettings a) {
    c.setAttention(a);
    return this;
  }

  public SparsityConfigBuilder attention(
      String pattern, int blockSize, boolean replaceSelfAttention, String... layerRegexes) {
    c.setAttention(
        new AttentionSettings(
            pattern,
            blockSize,
            layerRegexes.length == 0 ? List.of(".*") : List.of(layerRegexes),
            replaceSelfAttention));
    return this;
  }

  public SparsityConfigBuilder fuse(FuseSettings f) {
    c.setFuse(f);
    return this;
  }

  public SparsityConfigBuilder mst(JsonNode mst) {
    c.setMst(mst);
    return this;
  }

  public SparsityConfig build() {
    return c.copy().validate("<builder>");
  }
}
