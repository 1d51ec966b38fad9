package org.sparseflow.mst.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.sparseflow.layers.config.InitialMask;
import org.sparseflow.ops.pattern.MaskPattern;

/**
 * The framework-free MST engine shared by the DL4J and SameDiff listeners. The adapters register
 * the sparse weights, call {@link #initialize} once, then per optimizer step:
 *
 * <ol>
 *   <li>before the backward pass: {@link #isTopologyStep(long)} tells whether a dense gradient is
 *       needed;
 *   <li>after the optimizer step: {@link #stepDone} (FLOP accounting), then, when {@link
 *       #isMaskStep(long)}, {@link #updateMasks} with the weights and dense gradients (a topology
 *       update, or a prune-only step of a rising warm-up target); the adapter applies the returned
 *       masks, zeroes newly active weights and resets their optimizer state.
 * </ol>
 *
 * Step numbers are 0-based counts of optimizer steps; after step t has run, {@link #step()} = t +
 * 1. A topology update runs after step t when (t + 1) is a multiple of ΔT and t + 1 &lt;
 * totalSteps. Per-layer targets at an update are the allocation (ER/ERK/uniform) of the schedule's
 * global target at t + 1.
 */
public final class MstCore {
  private final MstConfig config;
  private final MaskPattern pattern;
  private final SplitMix64 rng;
  private final Map<String, int[]> shapes = new LinkedHashMap<>();
  private final Map<String, LayerMask> masks = new LinkedHashMap<>();
  private final List<Consumer<UpdateRecord>> recordListeners = new ArrayList<>();
  private final FlopLedger flops = new FlopLedger();
  private final ResetCorrection resets = new ResetCorrection();
  private int attentionLayers;
  private long step;
  private long updates;
  private double lastLoss = Double.NaN;
  private boolean initialized;

  /**
   * @param config validated config whose schedule has totalSteps set (see {@link
   *     MstConfig#withTotalSteps})
   */
  public MstCore(MstConfig config) {
    config.validate();
    if (config.getSchedule().getTotalSteps() <= 0) {
      throw Args.bad(
          "schedule.totalSteps",
          config.getSchedule().getTotalSteps(),
          "the run length in steps (use MstConfig.withTotalSteps(n))");
    }
    this.config = config;
    this.pattern = MaskPattern.parse(config.getPattern());
    this.rng = new SplitMix64(config.getSeed());
  }

  public MstConfig config() {
    return config;
  }

  /** Registers a sparse weight [rows, cols] (rows = nIn). */
  public void register(String name, int rows, int cols) {
    if (initialized) {
      throw new IllegalStateException("register(" + name + ") after initialize()");
    }
    pattern.checkShape(name, rows, cols);
    shapes.put(name, new int[] {rows, cols});
  }

  /**
   * FLOP model; {@code names} maps registered weight names to the counter's linear names (identity
   * if absent).
   */
  public void setFlopCounter(FlopCounter counter, Map<String, String> names) {
    flops.setCounter(counter, names);
  }

  public void setAttentionLayers(int n) {
    this.attentionLayers = n;
  }

  public void addRecordListener(Consumer<UpdateRecord> l) {
    recordListeners.add(l);
  }

  public Set<String> layers() {
    return Collections.unmodifiableSet(shapes.keySet());
  }

  /** Per-layer target sparsity for a global target. */
  public Map<String, Double> layerTargets(double globalSparsity) {
    Map<String, Double> fixed = new HashMap<>();
    if (pattern.kind() == MaskPattern.Kind.NM) {
      for (String k : shapes.keySet()) {
        fixed.put(k, pattern.fixedDensity());
      }
    }
    Map<String, Double> weights = new HashMap<>();
    for (String k : shapes.keySet()) {
      weights.put(k, config.densityWeightOf(k));
    }
    Map<String, Double> d =
        DensityAllocator.allocate(
            shapes, fixed, 1.0 - globalSparsity, config.getDistribution(), weights);
    Map<String, Double> s = new LinkedHashMap<>();
    d.forEach((k, v) -> s.put(k, Math.max(0.0, Math.min(1.0 - 1e-12, 1.0 - v))));
    return s;
  }

  /**
   * Creates the first masks at the schedule's sparsity at step 0 (random or by magnitude, per
   * config).
   *
   * @param weights name -> row-major weights (needed for MAGNITUDE; may be null for RANDOM)
   * @return the masks, in registration order
   */
  public Map<String, LayerMask> initialize(Map<String, float[]> weights) {
    Map<String, Double> targets = layerTargets(config.getSchedule().sparsityAt(0));
    for (Map.Entry<String, int[]> e : shapes.entrySet()) {
      String k = e.getKey();
      int r = e.getValue()[0];
      int c = e.getValue()[1];
      double dens = 1.0 - targets.get(k);
      LayerMask m;
      if (config.getInitialMask() == InitialMask.MAGNITUDE
          && pattern.kind() != MaskPattern.Kind.NM) {
        float[] w = weights == null ? null : weights.get(k);
        if (w == null) {
          throw Args.bad("weights of " + k, null, "the weights (initialMask = MAGNITUDE)");
        }
        m =
            TopologyUpdater.update(
                    LayerMask.dense(k, r, c, pattern),
                    w,
                    null,
                    targets.get(k),
                    0.0,
                    GrowMode.NONE,
                    0,
                    rng)
                .mask;
      } else {
        m = LayerMask.random(k, r, c, pattern, dens, rng);
      }
      masks.put(k, m);
    }
    initialized = true;
    return Collections.unmodifiableMap(masks);
  }

  /**
   * Starts from given masks instead of creating them (packed storage: the kept blocks the packed
   * weights hold); one per registered layer, of its shape and MST's pattern.
   */
  public Map<String, LayerMask> initializeFrom(Map<String, LayerMask> given) {
    if (!given.keySet().equals(shapes.keySet())) {
      throw Args.bad("initial masks", given.keySet(), "the registered layers " + shapes.keySet());
    }
    for (LayerMask m : given.values()) {
      int[] sh = shapes.get(m.name());
      if (sh[0] != m.rows()
          || sh[1] != m.cols()
          || !m.pattern().toString().equals(pattern.toString())) {
        throw Args.bad(
            "initial mask of " + m.name(),
            m.pattern() + " [" + m.rows() + ", " + m.cols() + "]",
            pattern + " [" + sh[0] + ", " + sh[1] + "]");
      }
      masks.put(m.name(), m);
    }
    initialized = true;
    return Collections.unmodifiableMap(masks);
  }

  public Map<String, LayerMask> masks() {
    return Collections.unmodifiableMap(masks);
  }

  public long step() {
    return step;
  }

  public Phase phase() {
    return config.getSchedule().phaseAt(step);
  }

  /** Whether a topology update follows step t (see {@link StepRules#topology}). */
  public boolean isTopologyStep(long t) {
    return StepRules.topology(config, !masks.isEmpty(), t);
  }

  /** Whether a prune-only step follows step t (see {@link StepRules#prune}). */
  public boolean isPruneStep(long t) {
    return StepRules.prune(config, pattern, !masks.isEmpty(), t);
  }

  /**
   * Runs the prune-only step that follows step t ({@code step() == t + 1}, {@link
   * #isPruneStep(long)} true): every layer below its allocated share of the schedule's target at t
   * + 1 drops its smallest-magnitude units (no regrowth, no gradient, no random choice); the others
   * keep their mask. Logged with {@code kind = "prune"}. Weights: row-major, after step t.
   */
  public Map<String, TopologyUpdater.Result> pruneToSchedule(long t, Map<String, float[]> weights) {
    return change(
        t,
        false,
        (k, m, target, f) ->
            TopologyUpdater.update(m, weights.get(k), null, target, 0.0, GrowMode.NONE, 0, rng));
  }

  /** Whether masks may change after step t: a topology update or a prune-only step follows it. */
  public boolean isMaskStep(long t) {
    return isTopologyStep(t) || isPruneStep(t);
  }

  /**
   * The mask change that follows step t: {@link #updateTopology} on topology steps, else {@link
   * #pruneToSchedule}.
   *
   * @param grads dense gradients of step t (used by topology updates only; may be null for RANDOM)
   */
  public Map<String, TopologyUpdater.Result> updateMasks(
      long t, Map<String, float[]> weights, Map<String, float[]> grads) {
    return isTopologyStep(t) ? updateTopology(t, weights, grads) : pruneToSchedule(t, weights);
  }

  /**
   * {@link #updateMasks} from scores per mask unit instead of dense arrays (packed storage, block
   * patterns): {@code weightScores} per layer ranks its active units (L2 norm per block), {@code
   * gradScores} its inactive ones for gradient growth (L2 norm of the dense gradient per block;
   * null on prune-only steps or for RANDOM growth). See {@link TopologyUpdater#updateFromScores}.
   */
  public Map<String, TopologyUpdater.Result> updateMasksFromScores(
      long t, Map<String, double[]> weightScores, Map<String, double[]> gradScores) {
    boolean topology = isTopologyStep(t);
    return change(
        t,
        topology,
        (k, m, target, f) ->
            TopologyUpdater.updateFromScores(
                m,
                weightScores.get(k),
                gradScores == null ? null : gradScores.get(k),
                target,
                topology ? f : 0.0,
                topology ? config.getGrowMode() : GrowMode.NONE,
                config.getGradRandomRatio(),
                rng));
  }

  /** One layer's mask change: mask m to layer target sparsity, drop fraction f. */
  private interface LayerChange {
    TopologyUpdater.Result apply(String name, LayerMask m, double target, double f);
  }

  /**
   * The mask change after step t: every layer to its share of the schedule's target at t + 1; a
   * topology update (counted, with the drop fraction of t) or a prune-only step (kind "prune").
   */
  private Map<String, TopologyUpdater.Result> change(
      long t, boolean topology, LayerChange layerChange) {
    String what = topology ? "updateTopology(" : "pruneToSchedule(";
    if (step != t + 1) {
      throw new IllegalStateException(what + t + ") must follow stepDone(" + t + ")");
    }
    double global = config.getSchedule().sparsityAt(t + 1);
    double f = topology ? config.getDropFraction().at(t, config.getSchedule()) : 0.0;
    Map<String, Double> targets = layerTargets(global);
    Map<String, TopologyUpdater.Result> out = new LinkedHashMap<>();
    UpdateRecord rec = new UpdateRecord();
    if (!topology) {
      rec.kind = UpdateRecord.PRUNE;
    }
    for (Map.Entry<String, LayerMask> e : masks.entrySet()) {
      String k = e.getKey();
      TopologyUpdater.Result r = layerChange.apply(k, e.getValue(), targets.get(k), f);
      out.put(k, r);
      e.setValue(r.mask);
      noteReset(k, r, t);
      rec.pruned.put(k, r.pruned);
      rec.grown.put(k, r.grown);
      rec.prunedTotal += r.pruned;
      rec.grownTotal += r.grown;
    }
    if (topology) {
      updates++;
    }
    fillRecord(rec, t + 1, global, f);
    return out;
  }

  /**
   * Factor for this step's optimizer update of weight {@code name}: min(max, density^-α), α faded
   * per {@link MstConfig#updateScaleExponentAt}; 1 when off.
   */
  public double updateScale(String name) {
    double a = config.updateScaleExponentAt(step, config.getSchedule().getTotalSteps());
    LayerMask m = masks.get(name);
    if (a == 0 || m == null || m.density() <= 0) {
      return 1.0;
    }
    return Math.min(config.getUpdateScaleMax(), Math.pow(m.density(), -a));
  }

  private void noteReset(String name, TopologyUpdater.Result r, long t) {
    if (config.isResetBiasCorrection()) {
      resets.note(name, r, t);
    }
  }

  /**
   * Per-element factors (row-major [rows, cols]) that turn Adam's update at step {@code t} into the
   * update of a freshly started Adam for every weight whose optimizer state was reset
   * (MstConfig#isResetBiasCorrection), or null when no weight of {@code name} has been reset; see
   * {@link ResetCorrection} for the formula.
   */
  public float[] resetCorrection(String name, long t, double beta1, double beta2) {
    float[] unit = resetUnitCorrection(name, t, beta1, beta2);
    return unit == null ? null : masks.get(name).unitsToElements(unit);
  }

  /**
   * As {@link #resetCorrection} but per mask unit (blocks for blockB patterns, elements otherwise),
   * so adapters can touch only the units that need it; null when no unit of {@code name} has been
   * reset.
   */
  public float[] resetUnitCorrection(String name, long t, double beta1, double beta2) {
    return resets.unitFactors(name, t, beta1, beta2);
  }

  /** Attention pattern of each attention layer for step t. */
  public List<String> attentionPatterns(long t) {
    long tc = Math.min(t, config.getSchedule().getTotalSteps() - 1);
    List<String> out = new ArrayList<>(attentionLayers);
    for (int i = 0; i < attentionLayers; i++) {
      out.add(config.getAttention().patternFor(i, tc, config.getSchedule()));
    }
    return out;
  }

  /**
   * Accounts step t (which ran with the current masks); call after the optimizer step, before an
   * update.
   */
  public void stepDone(long t, double loss) {
    if (t != step) {
      throw new IllegalStateException(
          "stepDone("
              + t
              + ") but the core is at step "
              + step
              + " (steps must be reported once each, in order)");
    }
    lastLoss = loss;
    boolean denseDw = needsDenseGradient(t);
    flops.account(
        masks.values(), denseDw, attentionPatterns(t), config.getAttention().getBlockSize());
    step = t + 1;
  }

  /** Whether step t needs the dense weight gradient (see {@link StepRules#denseGradient}). */
  public boolean needsDenseGradient(long t) {
    return StepRules.denseGradient(config, isTopologyStep(t));
  }

  /** Context length used for attention-pattern densities. */
  public void setSeqLen(int t) {
    flops.setSeqLen(t);
  }

  /**
   * Runs the topology update that follows step t ({@code step() == t + 1}), from the row-major
   * weights after step t and the dense gradients of step t (may be null for RANDOM growth).
   */
  public Map<String, TopologyUpdater.Result> updateTopology(
      long t, Map<String, float[]> weights, Map<String, float[]> grads) {
    return change(
        t,
        true,
        (k, m, target, f) ->
            TopologyUpdater.update(
                m,
                weights.get(k),
                grads == null ? null : grads.get(k),
                target,
                f,
                config.getGrowMode(),
                config.getGradRandomRatio(),
                rng));
  }

  private void fillRecord(UpdateRecord rec, long at, double global, double f) {
    rec.step = at;
    rec.phase = config.getSchedule().phaseAt(at).name();
    rec.targetSparsity = global;
    rec.dropFraction = f;
    fillDensities(rec);
    rec.attentionPatterns = attentionPatterns(at);
    rec.flops = flops.sparse();
    rec.denseFlops = flops.dense();
    rec.loss = lastLoss;
    for (Consumer<UpdateRecord> l : recordListeners) {
      l.accept(rec);
    }
  }

  /** A record of the current state (used for the first log line and by tests). */
  public UpdateRecord snapshotRecord() {
    UpdateRecord rec = new UpdateRecord();
    rec.step = step;
    rec.phase = phase().name();
    rec.targetSparsity = config.getSchedule().sparsityAt(step);
    fillDensities(rec);
    rec.attentionPatterns = attentionPatterns(step);
    rec.flops = flops.sparse();
    rec.denseFlops = flops.dense();
    rec.loss = lastLoss;
    return rec;
  }

  private void fillDensities(UpdateRecord rec) {
    long kept = 0;
    long total = 0;
    for (LayerMask m : masks.values()) {
      rec.layerDensity.put(m.name(), m.density());
      long n = (long) m.rows() * m.cols();
      kept += Math.round(m.density() * n);
      total += n;
    }
    rec.globalDensity = total == 0 ? 1.0 : (double) kept / total;
  }

  public double cumulativeFlops() {
    return flops.sparse();
  }

  public double cumulativeDenseFlops() {
    return flops.dense();
  }

  public long topologyUpdates() {
    return updates;
  }

  public MstState state() {
    MstState s = new MstState();
    s.setStep(step);
    s.setPhase(phase());
    s.setRngState(rng.state());
    s.setCumulativeFlops(flops.sparse());
    s.setCumulativeDenseFlops(flops.dense());
    s.setTopologyUpdates(updates);
    s.setAttentionPatterns(attentionPatterns(step));
    List<MstState.Mask> ms = new ArrayList<>();
    for (LayerMask m : masks.values()) {
      ms.add(new MstState.Mask(m));
    }
    s.setMasks(ms);
    s.setUnitResetSteps(resets.encode());
    s.setConfig(config.toJson());
    return s;
  }

  /** Restores a saved state; the registered layers must match the saved masks. */
  public void restore(MstState s) {
    Map<String, LayerMask> loaded = new LinkedHashMap<>();
    for (MstState.Mask m : s.getMasks()) {
      loaded.put(m.getName(), m.toLayerMask());
    }
    if (!loaded.keySet().equals(shapes.keySet())) {
      throw Args.bad(
          "saved MST masks", loaded.keySet(), "the registered layers " + shapes.keySet());
    }
    for (LayerMask m : loaded.values()) {
      int[] sh = shapes.get(m.name());
      if (sh[0] != m.rows() || sh[1] != m.cols()) {
        throw Args.bad(
            "saved mask shape of " + m.name(),
            "[" + m.rows() + ", " + m.cols() + "]",
            "[" + sh[0] + ", " + sh[1] + "]");
      }
    }
    masks.clear();
    masks.putAll(loaded);
    step = s.getStep();
    rng.setState(s.getRngState());
    flops.restore(s.getCumulativeFlops(), s.getCumulativeDenseFlops());
    updates = s.getTopologyUpdates();
    resets.restore(s.getUnitResetSteps(), masks);
    initialized = true;
  }
}
