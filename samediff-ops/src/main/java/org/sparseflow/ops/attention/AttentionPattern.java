package org.sparseflow.ops.attention;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Configuration of a causal sparse attention pattern: the union of one or more {@link Component}s.
 *
 * <p>String form (case-insensitive, {@code +} separates components; {@link #toString()} is the
 * inverse of {@link #parse(String)}):
 *
 * <ul>
 *   <li>{@code dense} — every key {@code j <= i} (dense causal attention).
 *   <li>{@code local:W} — the previous {@code W} tokens including itself: {@code i-W < j <= i}.
 *   <li>{@code strided:S} — every {@code S}-th previous token: {@code j <= i, (i-j) mod S == 0}
 *       (Sparse Transformer "strided", Child et al. 2019, arXiv 1904.10509).
 *   <li>{@code fixed:L:C} — keys in the query's own segment of length {@code L} plus the last
 *       {@code C} "summary" positions of every segment ({@code j mod L >= L-C}); Sparse Transformer
 *       "fixed". {@code fixed:L} means {@code C = 1}.
 *   <li>{@code global:G} — the first {@code G} tokens are global. Under causality a global query
 *       row {@code i < G} can only see {@code j <= i < G}, so this reduces to the key columns
 *       {@code j < G}.
 *   <li>{@code random:R[:seed=N]} — BigBird-style random blocks (Zaheer et al. 2020): every query
 *       block attends to {@code min(R, I)} distinct earlier key blocks drawn per head from a
 *       generator seeded with {@code N} (default 0). Defined at block level only.
 * </ul>
 *
 * Examples: {@code "dense"}, {@code "local:128"}, {@code "local:128+strided:128"}, {@code
 * "fixed:128:1"}, {@code "global:2+local:64"}, {@code "random:3:seed=7"}.
 *
 * <p>How a pattern becomes a block layout (and what the kernel computes) is defined in {@link
 * BlockLayout}. The class is JSON-friendly (public no-arg constructor, getters and setters); the
 * no-arg constructor gives {@code dense}.
 */
public final class AttentionPattern {

  /** Kinds of pattern component. */
  public enum Kind {
    DENSE,
    LOCAL,
    STRIDED,
    FIXED,
    GLOBAL,
    RANDOM;

    String token() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One component of a pattern. {@code size} is the window (LOCAL), stride (STRIDED), segment
   * length (FIXED), number of global tokens (GLOBAL) or number of random blocks (RANDOM); {@code
   * summary} is the number of summary positions per segment (FIXED only); {@code seed} is used by
   * RANDOM only.
   */
  public static final class Component {
    private Kind kind = Kind.DENSE;
    private int size;
    private int summary;
    private long seed;

    /** For JSON; gives a DENSE component. */
    public Component() {}

    public Component(Kind kind, int size, int summary, long seed) {
      this.kind = kind;
      this.size = size;
      this.summary = summary;
      this.seed = seed;
      validate();
    }

    public static Component dense() {
      return new Component(Kind.DENSE, 0, 0, 0);
    }

    public static Component local(int window) {
      return new Component(Kind.LOCAL, window, 0, 0);
    }

    public static Component strided(int stride) {
      return new Component(Kind.STRIDED, stride, 0, 0);
    }

    public static Component fixed(int segmentLength, int summary) {
      return new Component(Kind.FIXED, segmentLength, summary, 0);
    }

    public static Component global(int numTokens) {
      return new Component(Kind.GLOBAL, numTokens, 0, 0);
    }

    public static Component random(int numBlocks, long seed) {
      return new Component(Kind.RANDOM, numBlocks, 0, seed);
    }

    /** Throws IllegalArgumentException if the parameters do not fit the kind. */
    public void validate() {
      if (kind == null) {
        throw new IllegalArgumentException(
            "attention pattern component kind=null; allowed: " + allowedKinds());
      }
      switch (kind) {
        case DENSE:
          return;
        case LOCAL:
          requirePositive("window", size);
          return;
        case STRIDED:
          requirePositive("stride", size);
          return;
        case GLOBAL:
          requirePositive("numTokens (global)", size);
          return;
        case RANDOM:
          requirePositive("numBlocks (random)", size);
          return;
        case FIXED:
          requirePositive("segmentLength (fixed)", size);
          if (summary < 1 || summary > size) {
            throw new IllegalArgumentException(
                "attention pattern fixed:"
                    + size
                    + ":"
                    + summary
                    + ": summary="
                    + summary
                    + " must be in [1, segmentLength="
                    + size
                    + "]");
          }
          return;
        default:
          throw new IllegalStateException(kind.toString());
      }
    }

    private void requirePositive(String what, int value) {
      if (value <= 0) {
        throw new IllegalArgumentException(
            "attention pattern "
                + kind.token()
                + ": "
                + what
                + "="
                + value
                + " must be a positive integer (> 0)");
      }
    }

    /**
     * Element-level rule of this component for query {@code i} and key {@code j <= i}. RANDOM has
     * no element-level rule (it is defined on blocks) and returns false.
     */
    public boolean allows(int i, int j) {
      if (j > i || j < 0) {
        return false;
      }
      switch (kind) {
        case DENSE:
          return true;
        case LOCAL:
          return i - j < size;
        case STRIDED:
          return (i - j) % size == 0;
        case FIXED:
          return j / size == i / size || j % size >= size - summary;
        case GLOBAL:
          return j < size;
        case RANDOM:
          return false;
        default:
          throw new IllegalStateException(kind.toString());
      }
    }

    public Kind getKind() {
      return kind;
    }

    public void setKind(Kind kind) {
      this.kind = kind;
    }

    public int getSize() {
      return size;
    }

    public void setSize(int size) {
      this.size = size;
    }

    public int getSummary() {
      return summary;
    }

    public void setSummary(int summary) {
      this.summary = summary;
    }

    public long getSeed() {
      return seed;
    }

    public void setSeed(long seed) {
      this.seed = seed;
    }

    @Override
    public String toString() {
      switch (kind) {
        case DENSE:
          return "dense";
        case FIXED:
          return "fixed:" + size + ":" + summary;
        case RANDOM:
          return "random:" + size + ":seed=" + seed;
        default:
          return kind.token() + ":" + size;
      }
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Component)) {
        return false;
      }
      Component c = (Component) o;
      return kind == c.kind && size == c.size && summary == c.summary && seed == c.seed;
    }

    @Override
    public int hashCode() {
      return Objects.hash(kind, size, summary, seed);
    }
  }

  private List<Component> components = new ArrayList<>(List.of(Component.dense()));

  /** For JSON: the dense pattern. */
  public AttentionPattern() {}

  public AttentionPattern(List<Component> components) {
    setComponents(components);
  }

  public static AttentionPattern dense() {
    return new AttentionPattern();
  }

  /** Union of the given components. */
  public static AttentionPattern of(Component... components) {
    return new AttentionPattern(List.of(components));
  }

  /**
   * Parses the string form described in the class comment.
   *
   * @throws IllegalArgumentException naming the offending text and what is allowed
   */
  public static AttentionPattern parse(String spec) {
    if (spec == null || spec.isBlank()) {
      throw new IllegalArgumentException(
          "attention pattern='"
              + spec
              + "' is empty; expected e.g. 'dense', 'local:128', 'local:128+strided:128',"
              + " 'fixed:128:1', 'global:2+local:64', 'random:3:seed=7'");
    }
    List<Component> out = new ArrayList<>();
    for (String part : spec.split("\\+", -1)) {
      out.add(parseComponent(part.trim(), spec));
    }
    return new AttentionPattern(out);
  }

  private static Component parseComponent(String part, String spec) {
    if (part.isEmpty()) {
      throw new IllegalArgumentException(
          "attention pattern='"
              + spec
              + "' has an empty component; "
              + "components are separated by '+', e.g. 'local:128+strided:128'");
    }
    String[] f = part.split(":", -1);
    String name = f[0].trim().toLowerCase(Locale.ROOT);
    Kind kind;
    try {
      kind = Kind.valueOf(name.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "attention pattern='"
              + spec
              + "': unknown component name '"
              + f[0]
              + "'; allowed: "
              + allowedKinds());
    }
    switch (kind) {
      case DENSE:
        expectFields(part, f, 1, 1, spec, "dense");
        return Component.dense();
      case LOCAL:
        expectFields(part, f, 2, 2, spec, "local:<window>");
        return Component.local(parseInt(f[1], "window", part, spec));
      case STRIDED:
        expectFields(part, f, 2, 2, spec, "strided:<stride>");
        return Component.strided(parseInt(f[1], "stride", part, spec));
      case GLOBAL:
        expectFields(part, f, 2, 2, spec, "global:<numTokens>");
        return Component.global(parseInt(f[1], "numTokens", part, spec));
      case FIXED:
        {
          expectFields(part, f, 2, 3, spec, "fixed:<segmentLength>[:<summary>]");
          int len = parseInt(f[1], "segmentLength", part, spec);
          int summary = f.length == 3 ? parseInt(f[2], "summary", part, spec) : 1;
          return Component.fixed(len, summary);
        }
      case RANDOM:
        {
          expectFields(part, f, 2, 3, spec, "random:<numBlocks>[:seed=<long>]");
          int n = parseInt(f[1], "numBlocks", part, spec);
          long seed = 0;
          if (f.length == 3) {
            String s = f[2].trim();
            if (!s.toLowerCase(Locale.ROOT).startsWith("seed=")) {
              throw new IllegalArgumentException(
                  "attention pattern='"
                      + spec
                      + "': component '"
                      + part
                      + "' has '"
                      + s
                      + "'; allowed form: random:<numBlocks>[:seed=<long>]");
            }
            try {
              seed = Long.parseLong(s.substring(5).trim());
            } catch (NumberFormatException e) {
              throw new IllegalArgumentException(
                  "attention pattern='"
                      + spec
                      + "': seed='"
                      + s.substring(5)
                      + "' in '"
                      + part
                      + "' is not a long integer");
            }
          }
          return Component.random(n, seed);
        }
      default:
        throw new IllegalStateException(kind.toString());
    }
  }

  private static void expectFields(
      String part, String[] f, int min, int max, String spec, String form) {
    if (f.length < min || f.length > max) {
      throw new IllegalArgumentException(
          "attention pattern='"
              + spec
              + "': component '"
              + part
              + "' has "
              + (f.length - 1)
              + " parameter(s); allowed form: "
              + form);
    }
  }

  private static int parseInt(String s, String what, String part, String spec) {
    try {
      return Integer.parseInt(s.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "attention pattern='"
              + spec
              + "': "
              + what
              + "='"
              + s
              + "' in '"
              + part
              + "' is not an integer");
    }
  }

  static String allowedKinds() {
    return "dense, local:<window>, strided:<stride>, fixed:<segmentLength>[:<summary>],"
        + " global:<numTokens>, random:<numBlocks>[:seed=<long>]";
  }

  /**
   * Exact element-level rule for query {@code i}, key {@code j}: true when some non-RANDOM
   * component allows the pair ({@code j <= i} always required). The diagonal {@code j == i} is
   * always allowed.
   */
  public boolean allows(int i, int j) {
    if (j > i || j < 0) {
      return false;
    }
    if (j == i) {
      return true;
    }
    for (Component c : components) {
      if (c.allows(i, j)) {
        return true;
      }
    }
    return false;
  }

  /** True if some component is DENSE. */
  public boolean hasDenseComponent() {
    for (Component c : components) {
      if (c.getKind() == Kind.DENSE) {
        return true;
      }
    }
    return false;
  }

  /**
   * Fraction of the dense causal pairs ({@code T(T+1)/2}) allowed by the exact element-level rule
   * (RANDOM components ignored; use {@link BlockLayout#density()} for what the kernel computes).
   */
  public double elementDensity(int seqLen) {
    if (seqLen <= 0) {
      throw new IllegalArgumentException("seqLen=" + seqLen + " must be > 0");
    }
    long kept = 0;
    for (int i = 0; i < seqLen; i++) {
      for (int j = 0; j <= i; j++) {
        if (allows(i, j)) {
          kept++;
        }
      }
    }
    return kept / (seqLen * (seqLen + 1) / 2.0);
  }

  /** Builds the block layout for this pattern; see {@link BlockLayout#of}. */
  public BlockLayout layout(int seqLen, int blockSize, int numHeads) {
    return BlockLayout.of(this, seqLen, blockSize, numHeads);
  }

  public List<Component> getComponents() {
    return Collections.unmodifiableList(components);
  }

  /** Replaces the components; validates each. */
  public void setComponents(List<Component> components) {
    if (components == null || components.isEmpty()) {
      throw new IllegalArgumentException(
          "attention pattern components="
              + components
              + " must be a non-empty list of: "
              + allowedKinds());
    }
    for (Component c : components) {
      if (c == null) {
        throw new IllegalArgumentException(
            "attention pattern components contain null; allowed: " + allowedKinds());
      }
      c.validate();
    }
    this.components = new ArrayList<>(components);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    for (Component c : components) {
      if (sb.length() > 0) {
        sb.append('+');
      }
      sb.append(c);
    }
    return sb.toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AttentionPattern && components.equals(((AttentionPattern) o).components);
  }

  @Override
  public int hashCode() {
    return components.hashCode();
  }
}
