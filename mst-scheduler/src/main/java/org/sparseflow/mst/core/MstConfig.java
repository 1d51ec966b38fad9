package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.sparseflow.layers.config.DensityDistribution;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * Everything that defines an MST run: sparsity schedule, topology-update rule, layer selection and
 * the attention schedule. JSON/YAML via ND4J's shaded Jackson; this is also the schema of the
 * {@code mst} section of dl4j-sparse-layers' {@code SparsityConfig} (see {@link
 * #fromSparsityConfigSection}). Presets ship in the jar: {@link #preset(String)} with the names in
 * {@link #PRESETS}.
 */
public final class MstConfig {

  public static final List<String> PRESETS =
      List.of(
          "mst",
          "mst-local",
          "mst-gpt-mini",
          "mst-gpt-mini-block16",
          "rigl",
          "set",
          "gmp",
          "static",
          "dense");

  private String name = "custom";
  private String description = "";
  private String source = "";
  private SparsitySchedule schedule = SparsitySchedule.constant(0.0);
  private int deltaT = 100;
  private int pruneInterval = 0;
  private int topologyUpdates = 0;
  private double updateScaleExponent = 0.0;
  private double updateScaleMax = 10.0;
  private double updateScaleFadeStart = 1.0;
  private double updateScaleFadeEnd = 1.0;
  private boolean resetBiasCorrection = false;
  private DropFraction dropFraction = new DropFraction();
  private GrowMode growMode = GrowMode.MIXED;
  private double gradRandomRatio = 3.0;
  private DensityDistribution distribution = DensityDistribution.ER;
  private LinkedHashMap<String, Double> densityWeights = new LinkedHashMap<>();
  private String pattern = "unstructured";
  private InitialMask initialMask = InitialMask.RANDOM;
  private boolean updateTopology = true;
  private List<String> include = new ArrayList<>(List.of(".*"));
  private List<String> exclude = new ArrayList<>();
  private long seed = 42;
  private AttentionSchedule attention = AttentionSchedule.dense();

  /** Validates every field and returns this; errors name the field, value and what is allowed. */
  public MstConfig validate() {
    if (schedule == null) {
      throw Args.bad("schedule", null, "a sparsity schedule");
    }
    schedule.validate();
    if (deltaT < 1) {
      throw Args.bad("deltaT", deltaT, "an integer >= 1 (steps between topology updates)");
    }
    if (topologyUpdates < 0) {
      throw Args.bad(
          "topologyUpdates",
          topologyUpdates,
          "an integer >= 0 (topology updates per run; ΔT follows the run length; 0 = fixed"
              + " deltaT)");
    }
    if (pruneInterval < 0) {
      throw Args.bad(
          "pruneInterval",
          pruneInterval,
          "an integer >= 0 (steps between magnitude-pruning steps while "
              + "the sparsity target rises; 0 = only at topology updates)");
    }
    if (!(updateScaleExponent >= 0 && updateScaleExponent <= 2)) {
      throw Args.bad(
          "updateScaleExponent",
          updateScaleExponent,
          "a number in [0, 2] (0 = off, 1 = SμPar's 1/density)");
    }
    if (!(updateScaleMax >= 1)) {
      throw Args.bad("updateScaleMax", updateScaleMax, "a number >= 1 (cap on the update scale)");
    }
    if (!(updateScaleFadeStart >= 0 && updateScaleFadeStart <= 1)) {
      throw Args.bad(
          "updateScaleFadeStart", updateScaleFadeStart, "a fraction of the run in [0, 1]");
    }
    if (!(updateScaleFadeEnd >= updateScaleFadeStart && updateScaleFadeEnd <= 1)) {
      throw Args.bad(
          "updateScaleFadeEnd",
          updateScaleFadeEnd,
          "a fraction of the run in [updateScaleFadeStart = " + updateScaleFadeStart + ", 1]");
    }
    if (dropFraction == null) {
      throw Args.bad("dropFraction", null, "a drop-fraction schedule");
    }
    dropFraction.validate();
    if (growMode == null) {
      throw Args.bad("growMode", null, Arrays.toString(GrowMode.values()));
    }
    if (!(gradRandomRatio >= 0)) {
      throw Args.bad("gradRandomRatio", gradRandomRatio, "a number >= 0");
    }
    if (growMode == GrowMode.NONE && updateTopology && schedule.everDecreases()) {
      throw Args.bad(
          "growMode",
          growMode,
          "GRADIENT, RANDOM or MIXED: the schedule lowers sparsity, so "
              + "connections must be regrown");
    }
    if (densityWeights == null) {
      throw Args.bad("densityWeights", null, "a map of layer-name regex -> weight (may be empty)");
    }
    for (Map.Entry<String, Double> e : densityWeights.entrySet()) {
      regex("densityWeights", e.getKey());
      Double w = e.getValue();
      if (w == null || !(w > 0) || w.isInfinite()) {
        throw Args.bad("densityWeights[" + e.getKey() + "]", w, "a finite weight > 0");
      }
    }
    MaskPattern.parse(pattern);
    for (String r : include) {
      regex("include", r);
    }
    for (String r : exclude) {
      regex("exclude", r);
    }
    if (attention == null) {
      throw Args.bad("attention", null, "an attention schedule");
    }
    attention.validateAgainst(schedule);
    return this;
  }

  private static Pattern regex(String field, String r) {
    try {
      return Pattern.compile(r);
    } catch (PatternSyntaxException | NullPointerException e) {
      throw Args.bad(field, r, "a Java regular expression");
    }
  }

  /** Whether a parameter name is selected by include/exclude. */
  public boolean selects(String paramName) {
    boolean in = include.stream().anyMatch(r -> regex("include", r).matcher(paramName).matches());
    return in && exclude.stream().noneMatch(r -> regex("exclude", r).matcher(paramName).matches());
  }

  /**
   * Copy with the run length set. With {@link #getTopologyUpdates()} = n &gt; 0 the step counts
   * follow the run too, by one rule: ΔT = max(1, steps / n), and the prune-only interval keeps its
   * share of ΔT (at least 1). Schedule boundaries given as fractions already scale with the run.
   */
  public MstConfig withTotalSteps(long steps) {
    MstConfig c = copy();
    c.schedule = schedule.withTotalSteps(steps);
    if (topologyUpdates > 0) {
      int dt = (int) Math.min(Integer.MAX_VALUE, Math.max(1, steps / topologyUpdates));
      if (pruneInterval > 0) {
        c.pruneInterval = (int) Math.max(1, Math.round((double) pruneInterval * dt / deltaT));
      }
      c.deltaT = dt;
    }
    return c.validate();
  }

  /** Copy aimed at another final density: {@link SparsitySchedule#withFinalDensity}'s rule. */
  public MstConfig withTargetDensity(double density) {
    MstConfig c = copy();
    c.schedule = schedule.withFinalDensity(density);
    return c.validate();
  }

  /** Copy that starts sparse: {@link SparsitySchedule#withSparseStart}'s rule. */
  public MstConfig withSparseStart() {
    MstConfig c = copy();
    c.schedule = schedule.withSparseStart();
    return c.validate();
  }

  public MstConfig copy() {
    return fromJson(toJson());
  }

  // ---- loading / saving: MstConfigIO ----

  /** A shipped preset, by one of the names in {@link #PRESETS}. */
  public static MstConfig preset(String presetName) {
    return MstConfigIO.preset(presetName);
  }

  /** A preset name, or a .yaml/.yml/.json file path, read strictly. */
  public static MstConfig load(String presetOrPath) {
    return MstConfigIO.load(presetOrPath);
  }

  public static MstConfig fromYaml(String yaml) {
    return MstConfigIO.fromYaml(yaml);
  }

  public static MstConfig fromJson(String json) {
    return MstConfigIO.fromJson(json);
  }

  /** A dl4j-sparse-layers SparsityConfig's {@code mst} section, or the preset when it is absent. */
  public static MstConfig fromSparsityConfigSection(JsonNode mstSection, String presetIfAbsent) {
    return MstConfigIO.fromSparsityConfigSection(mstSection, presetIfAbsent);
  }

  /** Binds and validates a checked document tree; see {@link MstConfigIO#fromTree}. */
  public static MstConfig fromTree(JsonNode node, String what, String source, String pathPrefix) {
    return MstConfigIO.fromTree(node, what, source, pathPrefix);
  }

  public String toJson() {
    return MstConfigIO.toJson(this);
  }

  public String toYaml() {
    return MstConfigIO.toYaml(this);
  }

  // ---- bean accessors (enum setters take strings so bad values get a clear message) ----
  public String getName() {
    return name;
  }

  public void setName(String v) {
    name = v;
  }

  public String getDescription() {
    return description;
  }

  public void setDescription(String v) {
    description = v;
  }

  public String getSource() {
    return source;
  }

  public void setSource(String v) {
    source = v;
  }

  public SparsitySchedule getSchedule() {
    return schedule;
  }

  public void setSchedule(SparsitySchedule v) {
    schedule = v;
  }

  public int getDeltaT() {
    return deltaT;
  }

  public void setDeltaT(int v) {
    deltaT = v;
  }

  /**
   * Topology updates per run: when &gt; 0, {@link #withTotalSteps} sets ΔT to steps / this (and
   * scales {@link #getPruneInterval()} with it), so a preset behaves the same at any run length.
   * {@link #getDeltaT()} is then the value at the length the config was written for. 0 (default):
   * ΔT is used as given.
   */
  public int getTopologyUpdates() {
    return topologyUpdates;
  }

  public void setTopologyUpdates(int v) {
    topologyUpdates = v;
  }

  /**
   * Steps between prune-only steps while the schedule's target rises (warm-up): the target is
   * applied by magnitude pruning, without regrowth or a dense gradient, every {@code pruneInterval}
   * steps between topology updates, so the ramp is followed at Zhu &amp; Gupta's pruning frequency
   * rather than at ΔT. 0 (default): only at topology updates.
   */
  public int getPruneInterval() {
    return pruneInterval;
  }

  public void setPruneInterval(int v) {
    pruneInterval = v;
  }

  /**
   * α of the density-aware update scale: every optimizer update of a sparse weight is multiplied by
   * min({@link #getUpdateScaleMax()}, density^-α), density being the layer's current mask density.
   * With Adam a layer's output moves in proportion to lr times its active fan-in, so at density 0.1
   * a sparse layer learns about 10x slower in function space than the dense one; α = 1 is SμPar's
   * Adam learning-rate rule for sparse hidden weights (Dey et al. 2024, arXiv 2405.15743). 0
   * (default): off.
   */
  public double getUpdateScaleExponent() {
    return updateScaleExponent;
  }

  public void setUpdateScaleExponent(double v) {
    updateScaleExponent = v;
  }

  public double getUpdateScaleMax() {
    return updateScaleMax;
  }

  public void setUpdateScaleMax(double v) {
    updateScaleMax = v;
  }

  /**
   * Fade of the update scale: α applies in full before this fraction of the run, then falls
   * linearly to 0 at {@link #getUpdateScaleFadeEnd()} (sparse weights then step with the
   * optimizer's own rate, as the dense weights do). Default 1 (no fade).
   */
  public double getUpdateScaleFadeStart() {
    return updateScaleFadeStart;
  }

  public void setUpdateScaleFadeStart(double v) {
    updateScaleFadeStart = v;
  }

  /** Fraction of the run at which a fading update scale reaches α = 0 (scale 1); default 1. */
  public double getUpdateScaleFadeEnd() {
    return updateScaleFadeEnd;
  }

  public void setUpdateScaleFadeEnd(double v) {
    updateScaleFadeEnd = v;
  }

  /**
   * Whether Adam's bias correction of a weight whose optimizer state MST reset (grown or pruned)
   * counts from the reset instead of from the start of the run (the listener rescales the update of
   * such weights; Adam only). Without it a regrown weight's first updates are 3-6x the learning
   * rate: its fresh moments are divided by the run's bias corrections, which are ~1 late in a run.
   * Default false.
   */
  public boolean isResetBiasCorrection() {
    return resetBiasCorrection;
  }

  public void setResetBiasCorrection(boolean v) {
    resetBiasCorrection = v;
  }

  /** α of the update scale at step t of a run of totalSteps steps (the fade applied). */
  public double updateScaleExponentAt(long t, long totalSteps) {
    double f = totalSteps <= 0 ? 0 : (double) t / totalSteps;
    if (updateScaleExponent == 0 || f < updateScaleFadeStart) {
      return updateScaleExponent;
    }
    if (f >= updateScaleFadeEnd) {
      return 0.0;
    }
    return updateScaleExponent
        * (updateScaleFadeEnd - f)
        / (updateScaleFadeEnd - updateScaleFadeStart);
  }

  public DropFraction getDropFraction() {
    return dropFraction;
  }

  public void setDropFraction(DropFraction v) {
    dropFraction = v;
  }

  public GrowMode getGrowMode() {
    return growMode;
  }

  public void setGrowMode(String v) {
    growMode = Args.parseEnum(GrowMode.class, "growMode", v);
  }

  public double getGradRandomRatio() {
    return gradRandomRatio;
  }

  public void setGradRandomRatio(double v) {
    gradRandomRatio = v;
  }

  public DensityDistribution getDistribution() {
    return distribution;
  }

  public void setDistribution(String v) {
    distribution = Args.parseEnum(DensityDistribution.class, "distribution", v);
  }

  /**
   * Per-layer weights on the distribution's share (layer-name regex -> weight, first match wins,
   * default 1): density_l ∝ weight_l · share_l, within the same global budget (DensityAllocator).
   * Default empty.
   */
  public LinkedHashMap<String, Double> getDensityWeights() {
    return densityWeights;
  }

  public void setDensityWeights(LinkedHashMap<String, Double> v) {
    densityWeights = v;
  }

  /** The density weight of a layer: the first matching {@link #getDensityWeights()} entry or 1. */
  public double densityWeightOf(String layer) {
    for (Map.Entry<String, Double> e : densityWeights.entrySet()) {
      if (regex("densityWeights", e.getKey()).matcher(layer).matches()) {
        return e.getValue();
      }
    }
    return 1.0;
  }

  public String getPattern() {
    return pattern;
  }

  public void setPattern(String v) {
    pattern = v;
  }

  public InitialMask getInitialMask() {
    return initialMask;
  }

  public void setInitialMask(String v) {
    initialMask = Args.parseEnum(InitialMask.class, "initialMask", v);
  }

  public boolean isUpdateTopology() {
    return updateTopology;
  }

  public void setUpdateTopology(boolean v) {
    updateTopology = v;
  }

  public List<String> getInclude() {
    return include;
  }

  public void setInclude(List<String> v) {
    include = v;
  }

  public List<String> getExclude() {
    return exclude;
  }

  public void setExclude(List<String> v) {
    exclude = v;
  }

  public long getSeed() {
    return seed;
  }

  public void setSeed(long v) {
    seed = v;
  }

  public AttentionSchedule getAttention() {
    return attention;
  }

  public void setAttention(AttentionSchedule v) {
    attention = v;
  }

  /** Equal when every field is: compared through the JSON form, which lists them all. */
  @Override
  public boolean equals(Object o) {
    return o instanceof MstConfig c && (c == this || toJson().equals(c.toJson()));
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, schedule, deltaT, dropFraction, growMode, pattern, seed);
  }
}
