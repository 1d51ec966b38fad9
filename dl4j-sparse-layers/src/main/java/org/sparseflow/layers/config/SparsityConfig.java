package org.sparseflow.layers.config;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import org.nd4j.shade.jackson.annotation.JsonInclude;
import org.nd4j.shade.jackson.annotation.JsonPropertyOrder;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * The configuration switch: one JSON/YAML document that turns a dense DL4J / SameDiff model sparse.
 *
 * <pre>
 * pattern: block16            # unstructured | block8/16/32/64 | N:M
 * sparsity: 0.9               # fraction of zeros over all selected weights, in [0, 1)
 * distribution: ERK           # UNIFORM | ER | ERK (RigL, arXiv 1911.11134, dense fallback)
 * initialMask: MAGNITUDE      # RANDOM | MAGNITUDE
 * storage: masked            # masked (dense W + mask) | packed (block or N:M patterns: kept
 *                             # values only; N:M adds 2-bit offsets for m <= 4; dense and
 *                             # output layers and attention projections)
 * seed: 42
 * include: [".*"]             # regexes over layer names and param names ("0_W", "attn1_Wq",
 * SameDiff var names)
 * exclude: [...]              # default: embeddings and layer norms
 * keepFirstDense: true        # first layer(s): MultiLayerNetwork order; graphs: depth from inputs
 * keepLastDense: true         # last layer(s), counted the same way
 * attention: {pattern: "local:16+strided:16", blockSize: 16, layers: [".*"], replaceSelfAttention:
 * false}
 * fuse: {layerNorm: true, gelu: true, biasAdd: true}  # SameDiff op fusion (FuseSettings)
 * mst: {...}                  # opaque, owned by the mst-scheduler
 * </pre>
 *
 * Regexes are matched with {@link java.util.regex.Matcher#matches()} (whole name). Validation
 * happens in {@link SparsityConfigBuilder#build()} and when a document is parsed ({@link
 * #validate(String)}); errors are {@link IllegalArgumentException}s naming the source, field, value
 * and what is allowed. Load with {@link #fromYaml}, {@link #fromJson}, {@link #load(Path)}, {@link
 * #load(InputStream, String)} or {@link #resolve()} (system property {@value #SYSTEM_PROPERTY}, env
 * {@value #ENV_VARIABLE}, classpath {@value #CLASSPATH_RESOURCE}).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({
  "pattern",
  "sparsity",
  "distribution",
  "initialMask",
  "storage",
  "seed",
  "include",
  "exclude",
  "keepFirstDense",
  "keepLastDense",
  "attention",
  "fuse",
  "mst"
})
public class SparsityConfig {
  public static final String SYSTEM_PROPERTY = "sparseflow.config";
  public static final String ENV_VARIABLE = "SPARSEFLOW_CONFIG";
  public static final String CLASSPATH_RESOURCE = "sparseflow.yaml";

  /** Weight storage: a dense W plus a mask (any pattern; MST can change the mask). */
  public static final String STORAGE_MASKED = "masked";

  /**
   * Weight storage: only the kept values (memory follows density). Block patterns keep the kept
   * blocks; N:M patterns keep n of every m values plus each one's offset in its group (2 bits for m
   * <= 4, so 2:4 costs 2 B of values + 1/8 B of offsets per dense fp32 weight). Unstructured
   * patterns are refused. Applies to dense and output layers and to attention projections.
   */
  public static final String STORAGE_PACKED = "packed";

  /** Layer/param names matching one of these are kept dense by default: embeddings. */
  public static final String DEFAULT_EXCLUDE_EMBEDDINGS =
      "(?i)(.*[^a-z])?(emb|embed|embedding|embeddings|wte|wpe|tok_emb|pos_emb)([^a-z].*)?";

  /** Layer/param names matching one of these are kept dense by default: layer norms. */
  public static final String DEFAULT_EXCLUDE_NORMS =
      "(?i)(.*[^a-z])?(ln|layernorm|layer_norm|norm)([^a-z].*)?";

  private String pattern = "unstructured";
  private double sparsity = 0.5;
  private DensityDistribution distribution = DensityDistribution.UNIFORM;
  private InitialMask initialMask = InitialMask.RANDOM;
  private String storage = STORAGE_MASKED;
  private long seed = 12345L;
  private List<String> include = new ArrayList<>(List.of(".*"));
  private List<String> exclude =
      new ArrayList<>(List.of(DEFAULT_EXCLUDE_EMBEDDINGS, DEFAULT_EXCLUDE_NORMS));
  private boolean keepFirstDense = true;
  private boolean keepLastDense = true;
  private AttentionSettings attention;
  private FuseSettings fuse;
  private JsonNode mst;

  /** Jackson constructor: the defaults above. */
  public SparsityConfig() {}

  public static SparsityConfigBuilder builder() {
    return new SparsityConfigBuilder();
  }

  // ---------------------------------------------------------------- bean accessors (Jackson)
  public String getPattern() {
    return pattern;
  }

  public void setPattern(String pattern) {
    this.pattern = pattern;
  }

  public double getSparsity() {
    return sparsity;
  }

  public void setSparsity(double sparsity) {
    this.sparsity = sparsity;
  }

  public DensityDistribution getDistribution() {
    return distribution;
  }

  public void setDistribution(DensityDistribution distribution) {
    this.distribution = distribution;
  }

  public InitialMask getInitialMask() {
    return initialMask;
  }

  public void setInitialMask(InitialMask initialMask) {
    this.initialMask = initialMask;
  }

  /** {@value #STORAGE_MASKED} (default) or {@value #STORAGE_PACKED}. */
  public String getStorage() {
    return storage;
  }

  public void setStorage(String storage) {
    this.storage = storage;
  }

  /** True when the config asks for packed storage. */
  public boolean packedStorage() {
    return STORAGE_PACKED.equals(storage);
  }

  public long getSeed() {
    return seed;
  }

  public void setSeed(long seed) {
    this.seed = seed;
  }

  public List<String> getInclude() {
    return include;
  }

  public void setInclude(List<String> include) {
    this.include = include;
  }

  public List<String> getExclude() {
    return exclude;
  }

  public void setExclude(List<String> exclude) {
    this.exclude = exclude;
  }

  /**
   * Whether the first candidate layer(s) stay dense. MultiLayerNetwork: the first supported layer
   * with maskable weights, in layer order. ComputationGraph: every such layer at the smallest
   * depth, the largest number of such layers on a path from a network input to it. SameDiff: every
   * linear weight with a use at the smallest depth from the graph inputs, where a linear op's depth
   * counts the linear ops on the longest path from a placeholder to it (so Q, K and V of the first
   * block count together).
   */
  public boolean isKeepFirstDense() {
    return keepFirstDense;
  }

  public void setKeepFirstDense(boolean keepFirstDense) {
    this.keepFirstDense = keepFirstDense;
  }

  /** Whether the last candidate layer(s) stay dense; counted as in {@link #isKeepFirstDense}. */
  public boolean isKeepLastDense() {
    return keepLastDense;
  }

  public void setKeepLastDense(boolean keepLastDense) {
    this.keepLastDense = keepLastDense;
  }

  public AttentionSettings getAttention() {
    return attention;
  }

  public void setAttention(AttentionSettings attention) {
    this.attention = attention;
  }

  /** The {@code fuse} section as written; null when absent (see {@link #fuseOrDefault()}). */
  public FuseSettings getFuse() {
    return fuse;
  }

  public void setFuse(FuseSettings fuse) {
    this.fuse = fuse;
  }

  /** The {@code fuse} section, or {@link FuseSettings#defaults()} when absent. */
  public FuseSettings fuseOrDefault() {
    return fuse == null ? FuseSettings.defaults() : fuse.copy();
  }

  /** Opaque MST section (schema owned by the mst-scheduler); null when absent. */
  public JsonNode getMst() {
    return mst;
  }

  public void setMst(JsonNode mst) {
    this.mst = mst;
  }

  // ---------------------------------------------------------------- derived helpers (not bean
  // properties)
  /** Global target density = 1 - sparsity. */
  public double targetDensity() {
    return 1.0 - sparsity;
  }

  /** True if {@code name} is selected by include and not rejected by exclude. */
  public boolean selects(String name) {
    return matchesAny(include, name) && !matchesAny(exclude, name);
  }

  /** First exclude regex matching {@code name}, or null. */
  public String excludedBy(String name) {
    if (exclude == null) {
      return null;
    }
    for (String r : exclude) {
      if (Pattern.compile(r).matcher(name).matches()) {
        return r;
      }
    }
    return null;
  }

  public boolean included(String name) {
    return matchesAny(include, name);
  }

  /** True if the attention section selects the attention layer / variable named {@code name}. */
  public boolean attentionSelects(String name) {
    return attention != null && matchesAny(attention.getLayers(), name);
  }

  static boolean matchesAny(List<String> regexes, String name) {
    if (regexes == null || name == null) {
      return false;
    }
    for (String r : regexes) {
      if (Pattern.compile(r).matcher(name).matches()) {
        return true;
      }
    }
    return false;
  }

  public SparsityConfig copy() {
    SparsityConfig c = new SparsityConfig();
    c.pattern = pattern;
    c.sparsity = sparsity;
    c.distribution = distribution;
    c.initialMask = initialMask;
    c.storage = storage;
    c.seed = seed;
    c.include = include == null ? null : new ArrayList<>(include);
    c.exclude = exclude == null ? null : new ArrayList<>(exclude);
    c.keepFirstDense = keepFirstDense;
    c.keepLastDense = keepLastDense;
    c.attention = attention == null ? null : attention.copy();
    c.fuse = fuse == null ? null : fuse.copy();
    c.mst = mst == null ? null : mst.deepCopy();
    return c;
  }

  // ---------------------------------------------------------------- validation
  /**
   * Checks every field; throws an {@link IllegalArgumentException} naming {@code source}, the
   * field, its value and what is allowed.
   */
  public SparsityConfig validate(String source) {
    SparsityConfigValidation.check(this, source == null ? "<builder>" : source);
    return this;
  }

  static IllegalArgumentException fieldError(
      String src, String field, Object value, String allowed) {
    return SparsityConfigValidation.fieldError(src, field, value, allowed);
  }

  // ---------------------------------------------------------------- IO (delegates to
  // SparsityConfigIO)
  public String toJson() {
    return SparsityConfigIO.toJson(this);
  }

  public String toYaml() {
    return SparsityConfigIO.toYaml(this);
  }

  public static SparsityConfig fromJson(String json) {
    return SparsityConfigIO.parse(json, "<json string>", false);
  }

  public static SparsityConfig fromYaml(String yaml) {
    return SparsityConfigIO.parse(yaml, "<yaml string>", true);
  }

  /** Reads a .json file as JSON and anything else as YAML. */
  public static SparsityConfig load(Path file) {
    return SparsityConfigIO.load(file);
  }

  /**
   * Reads a stream; {@code sourceName} (e.g. a file name) is used in errors and picks JSON if it
   * ends in .json.
   */
  public static SparsityConfig load(InputStream in, String sourceName) {
    return SparsityConfigIO.load(in, sourceName);
  }

  /**
   * Finds the configuration in order: system property {@value #SYSTEM_PROPERTY} (a path),
   * environment variable {@value #ENV_VARIABLE} (a path), classpath resource {@value
   * #CLASSPATH_RESOURCE}. Empty when none is set: the model stays dense.
   */
  public static Optional<SparsityConfig> resolve() {
    return SparsityConfigIO.resolve();
  }

  // ---------------------------------------------------------------- equality
  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (!(o instanceof SparsityConfig c)) {
      return false;
    }
    return Double.compare(sparsity, c.sparsity) == 0
        && seed == c.seed
        && keepFirstDense == c.keepFirstDense
        && keepLastDense == c.keepLastDense
        && Objects.equals(pattern, c.pattern)
        && distribution == c.distribution
        && initialMask == c.initialMask
        && Objects.equals(storage, c.storage)
        && Objects.equals(include, c.include)
        && Objects.equals(exclude, c.exclude)
        && Objects.equals(attention, c.attention)
        && Objects.equals(fuse, c.fuse)
        && Objects.equals(mst, c.mst);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        pattern,
        sparsity,
        distribution,
        initialMask,
        storage,
        seed,
        include,
        exclude,
        keepFirstDense,
        keepLastDense,
        attention,
        fuse,
        mst);
  }

  @Override
  public String toString() {
    return "SparsityConfig{pattern="
        + pattern
        + ", sparsity="
        + sparsity
        + ", distribution="
        + distribution
        + ", initialMask="
        + initialMask
        + ", storage="
        + storage
        + ", seed="
        + seed
        + ", include="
        + include
        + ", exclude="
        + exclude
        + ", keepFirstDense="
        + keepFirstDense
        + ", keepLastDense="
        + keepLastDense
        + ", attention="
        + attention
        + ", fuse="
        + fuse
        + ", mst="
        + mst
        + "}";
  }
}
