package org.sparseflow.mst;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.ListenerResponse;
import org.nd4j.autodiff.listeners.ListenerVariables;
import org.nd4j.autodiff.listeners.Loss;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.listeners.records.LossCurve;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.api.ops.impl.transforms.pairwise.arithmetic.Axpy;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.sparseflow.mst.core.FlopCounter;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MaskPattern;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.TopologyUpdater;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.mst.dl4j.Dl4jWeights;

/**
 * Mixed Sparsity Training for DL4J and SameDiff: one listener, one {@link MstCore}.
 *
 * <pre>
 *   MstListener mst = new MstListener(MstConfig.preset("mst").withTotalSteps(2000));
 *   net.setListeners(mst);      // MultiLayerNetwork / ComputationGraph
 *   mst.addTo(sd);              // or SameDiff (not sd.addListeners: the listener needs the graph's updaters)
 * </pre>
 *
 * DL4J (call order verified in dl4j-m2.1-notes §6): {@code onGradientCalculation} reads the raw
 * dense gradient on topology steps and masks the gradient before the updater; {@code iterationDone}
 * (after params -= update) re-masks the weights, accounts FLOPs and, on topology steps, applies the
 * new masks, zeroes regrown weights and resets their optimizer state (Adam m/v, momentum) — also at
 * pruned positions. SameDiff: {@code opExecution} of "&lt;W&gt;-grad" captures the dense gradient,
 * {@code preUpdate} masks the update, {@code iterationDone} as above (SameDiff weights named by the
 * config's include/exclude regexes; rank-2 trainable variables, [nIn, nOut]).
 *
 * <p>Deviation from the authors' code: the optimizer step is not skipped on topology steps (DL4J
 * offers no hook to skip it); RigL does not skip it either.
 */
public final class MstListener implements TrainingListener, org.nd4j.autodiff.listeners.Listener {
  private static final Logger LOG = LoggerFactory.getLogger(MstListener.class);

  /** Applies an attention pattern string to attention layer i. */
  public interface AttentionApplier {
    void apply(int layer, String pattern);
  }

  private final MstCore core;
  private MstState pendingRestore;
  private final List<Consumer<UpdateRecord>> recordSinks = new ArrayList<>();
  private AttentionApplier attentionApplier;
  private List<String> appliedPatterns;
  // DL4J
  private List<Dl4jWeights.Binding> dl4j;
  private final Map<String, float[]> capturedGrads = new HashMap<>();
  private final Map<String, INDArray> correctionBuffers = new HashMap<>();
  // SameDiff
  private Map<String, INDArray> sdMasks;
  private SameDiff attachedSd;
  private boolean warnedNoUpdaters;
  private boolean
      warnedNoUpdate; // DL4J update scaling found no update for a bound weight (logged once)
  // overhead measurement
  private long overheadNanos;
  private long lastIterEnd;
  private long stepNanos;
  private long timedSteps;

  public MstListener(MstConfig configWithTotalSteps) {
    this.core = new MstCore(configWithTotalSteps);
  }

  /** Resumes from a saved state (config taken from the state). */
  public static MstListener resume(MstState state) {
    MstListener l = new MstListener(MstConfig.fromJson(state.getConfig()));
    l.pendingRestore = state;
    return l;
  }

  /**
   * Adds this listener to a SameDiff graph and remembers it (needed to reach its optimizer state).
   */
  public MstListener addTo(SameDiff sd) {
    this.attachedSd = sd;
    sd.addListeners(this);
    return this;
  }

  public MstCore core() {
    return core;
  }

  public MstListener flopCounter(FlopCounter counter, Map<String, String> names, int seqLen) {
    core.setFlopCounter(counter, names);
    core.setSeqLen(seqLen);
    return this;
  }

  public MstListener attention(int layers, AttentionApplier applier) {
    core.setAttentionLayers(layers);
    this.attentionApplier = applier;
    return this;
  }

  public MstListener onUpdate(Consumer<UpdateRecord> sink) {
    core.addRecordListener(sink);
    recordSinks.add(sink);
    return this;
  }

  public MstState state() {
    return core.state();
  }

  /** Listener time per step over step time (time between consecutive iterationDone calls). */
  public double overheadFraction() {
    return stepNanos == 0 ? Double.NaN : (double) overheadNanos / stepNanos;
  }

  public double overheadMillisPerStep() {
    return timedSteps == 0 ? Double.NaN : overheadNanos / 1e6 / timedSteps;
  }

  // ------------------------------------------------------------------ shared helpers

  private static float[] rowMajor(INDArray a) {
    return a.castTo(DataType.FLOAT).dup('c').data().asFloat();
  }

  private static INDArray toArray(float[] rowMajor, int rows, int cols, DataType dt) {
    return Nd4j.create(rowMajor, new long[] {rows, cols}, 'c').castTo(dt);
  }

  private void applyAttention() {
    if (attentionApplier == null) {
      return;
    }
    List<String> p = core.attentionPatterns(core.step());
    if (!p.equals(appliedPatterns)) {
      for (int i = 0; i < p.size(); i++) {
        if (appliedPatterns == null || !p.get(i).equals(appliedPatterns.get(i))) {
          attentionApplier.apply(i, p.get(i));
        }
      }
      appliedPatterns = p;
    }
  }

  private void timeStep(long start) {
    long now = System.nanoTime();
    overheadNanos += now - start;
    if (lastIterEnd != 0) {
      stepNanos += now - lastIterEnd;
      timedSteps++;
    }
    lastIterEnd = now;
  }

  // ------------------------------------------------------------------ DL4J

  private void bindDl4j(Model model) {
    if (dl4j != null) {
      return;
    }
    dl4j = Dl4jWeights.find(model, core.config());
    Map<String, float[]> w = new LinkedHashMap<>();
    for (Dl4jWeights.Binding b : dl4j) {
      core.register(b.name, b.rows, b.cols);
      w.put(b.name, rowMajor(b.weight));
    }
    if (pendingRestore != null) {
      core.restore(pendingRestore);
      pendingRestore = null;
    } else {
      core.initialize(w);
    }
    for (Dl4jWeights.Binding b : dl4j) {
      LayerMask m = core.masks().get(b.name);
      b.mask.assign(toArray(m.toElementMask(), b.rows, b.cols, b.mask.dataType()));
      b.weight.muli(b.mask);
      if (b.maskParam != null) {
        b.maskParam.assign(b.mask);
      }
      b.requestDense(core.isTopologyStep(core.step()));
    }
    if (attentionApplier == null) {
      List<org.deeplearning4j.nn.api.Layer> att = Dl4jWeights.attentionLayers(model);
      if (!att.isEmpty()) {
        core.setAttentionLayers(att.size());
        attentionApplier = (i, p) -> Dl4jWeights.setAttentionPattern(att.get(i), p);
      }
    }
    LOG.info(
        "MST bound {} weights of {}: {}",
        dl4j.size(),
        model.getClass().getSimpleName(),
        core.snapshotRecord().layerDensity);
    applyAttention();
  }

  @Override
  public void onEpochStart(Model model) {
    bindDl4j(model);
  }

  @Override
  public void onEpochEnd(Model model) {}

  @Override
  public void onForwardPass(Model model, List<INDArray> activations) {}

  @Override
  public void onForwardPass(Model model, Map<String, INDArray> activations) {}

  @Override
  public void onBackwardPass(Model model) {}

  @Override
  public void onGradientCalculation(Model model) {
    long t0 = System.nanoTime();
    bindDl4j(model);
    boolean topo = core.isTopologyStep(core.step());
    for (Dl4jWeights.Binding b : dl4j) {
      if (topo) {
        INDArray g = b.denseGradient(model);
        if (g != null) {
          capturedGrads.put(b.name, rowMajor(g));
        }
      }
      b.maskGradient(model);
    }
    overheadNanos += System.nanoTime() - t0;
  }

  @Override
  public void iterationDone(Model model, int iteration, int epoch) {
    long t0 = System.nanoTime();
    bindDl4j(model);
    scaleUpdates(model);
    long t = core.step();
    core.stepDone(t, model.score());
    if (core.isMaskStep(t)) {
      Map<String, float[]> w = new HashMap<>();
      for (Dl4jWeights.Binding b : dl4j) {
        w.put(b.name, rowMajor(b.weight));
      }
      Map<String, TopologyUpdater.Result> res =
          core.updateMasks(t, w, capturedGrads.isEmpty() ? null : capturedGrads);
      for (Dl4jWeights.Binding b : dl4j) {
        TopologyUpdater.Result r = res.get(b.name);
        if (r.pruned == 0 && r.grown == 0) {
          continue;
        }
        INDArray newMask = toArray(r.mask.toElementMask(), b.rows, b.cols, b.mask.dataType());
        b.mask.assign(newMask);
        if (b.maskParam != null) {
          b.maskParam.assign(newMask);
        }
        INDArray keep = changedKeep(r, b.rows, b.cols, b.mask.dataType());
        b.weight.muli(keep); // regrown weights start at exactly zero
        Dl4jWeights.scaleUpdaterState(model, b, keep);
      }
      capturedGrads.clear();
    }
    for (Dl4jWeights.Binding b : dl4j) {
      // SparseFlow layers re-mask their weights themselves (applyConstraints, which DL4J runs right
      // after the
      // listeners on every optimizer step); stock layers are masked here
      if (b.maskParam == null) {
        b.weight.muli(b.mask);
      }
      b.requestDense(core.isTopologyStep(core.step()));
    }
    applyAttention();
    timeStep(t0);
  }

  /**
   * Density-aware update scale (MstConfig#getUpdateScaleExponent). DL4J's updater writes the update
   * into the gradient view and the step function subtracts it; at iterationDone that view still
   * holds the update u, so W -= (s - 1) u turns the applied step into s u.
   */
  private void scaleUpdates(Model model) {
    boolean correct = core.config().isResetBiasCorrection();
    if ((core.config().getUpdateScaleExponent() == 0 && !correct) || model.gradient() == null) {
      return;
    }
    for (Dl4jWeights.Binding b : dl4j) {
      double s = core.updateScale(b.name);
      INDArray u = model.gradient().gradientForVariable().get(b.name);
      if (u == null) {
        if (!warnedNoUpdate) {
          warnedNoUpdate = true;
          LOG.warn("MST update scaling: no update found for {}; it is trained unscaled", b.name);
        }
        continue;
      }
      if (s != 1.0) {
        Nd4j.exec(new Axpy(u, b.weight, b.weight, 1.0 - s)); // W += (1 - s) u, in place
      }
      double[] betas = correct ? b.adamBetas() : null;
      if (betas != null) {
        // then W += s (1 - c) u on the active units whose optimizer state was reset: W += (1 - s c)
        // u in all
        float[] c = core.resetUnitCorrection(b.name, core.step(), betas[0], betas[1]);
        if (c != null && !correctActiveUnits(b.weight, u, s, c, core.masks().get(b.name))) {
          INDArray f = correctionBuffer(b.name, b.weight);
          f.assign(Nd4j.create(core.unitsToElements(b.name, c), new long[] {b.rows, b.cols}, 'c'));
          f.rsubi(1.0).muli(s).muli(u);
          b.weight.addi(f);
        }
      }
    }
  }

  /**
   * W += s (1 - c_unit) u on active units with c_unit != 1, straight on the float buffers (pruned
   * units have a zero update; units never reset have c = 1), so the cost follows the active young
   * units, not the layer size.
   *
   * @return false when the arrays are not plain float matrices (the caller then uses ND4J ops)
   */
  private static boolean correctActiveUnits(
      INDArray w, INDArray u, double s, float[] unitFactor, LayerMask m) {
    if (!FAST_CORRECTION
        || w.dataType() != DataType.FLOAT
        || u.dataType() != DataType.FLOAT
        || w.rank() != 2
        || u.rank() != 2) {
      return false;
    }
    java.nio.FloatBuffer wb = floatsOf(w), ub = floatsOf(u);
    long w0 = w.stride(0), w1 = w.stride(1), u0 = u.stride(0), u1 = u.stride(1);
    int cols = m.cols();
    int b = m.pattern().kind() == MaskPattern.Kind.BLOCK ? m.pattern().blockSize() : 1;
    int blockCols = cols / b;
    for (int unit = 0; unit < unitFactor.length; unit++) {
      float c = unitFactor[unit];
      if (c == 1f || !m.isUnitActive(unit)) {
        continue;
      }
      float k = (float) (s * (1.0 - c));
      int r0 = (unit / blockCols) * b, c0 = (unit % blockCols) * b;
      for (int r = r0; r < r0 + b; r++) {
        for (int col = c0; col < c0 + b; col++) {
          int wi = (int) (r * w0 + col * w1);
          wb.put(wi, wb.get(wi) + k * ub.get((int) (r * u0 + col * u1)));
        }
      }
    }
    return true;
  }

  /**
   * Set false by tests to compare the direct-buffer path of {@link #correctActiveUnits} with the
   * ND4J one.
   */
  static boolean FAST_CORRECTION = true;

  /**
   * The memory of a float array from element 0 through its last element, indexed by r * stride(0) +
   * c * stride(1).
   */
  private static java.nio.FloatBuffer floatsOf(INDArray a) {
    long addr = org.sparseflow.ops.NativeAddress.of(a);
    long span = 1 + (a.size(0) - 1) * a.stride(0) + (a.size(1) - 1) * a.stride(1);
    org.bytedeco.javacpp.FloatPointer f =
        new org.bytedeco.javacpp.FloatPointer() {
          {
            address = addr;
          }
        };
    f.capacity(span).limit(span);
    return f.asBuffer();
  }

  private INDArray correctionBuffer(String name, INDArray like) {
    INDArray f = correctionBuffers.get(name);
    if (f == null) {
      f = Nd4j.createUninitialized(like.dataType(), like.shape(), like.ordering());
      correctionBuffers.put(name, f);
    }
    return f;
  }

  /** 1 everywhere except 0 at elements whose mask changed (grown or pruned). */
  private static INDArray changedKeep(TopologyUpdater.Result r, int rows, int cols, DataType dt) {
    float[] keep = new float[rows * cols];
    java.util.Arrays.fill(keep, 1f);
    for (int e : r.newlyActiveElements) {
      keep[e] = 0f;
    }
    for (int e : r.newlyInactiveElements) {
      keep[e] = 0f;
    }
    return toArray(keep, rows, cols, dt);
  }

  // ------------------------------------------------------------------ SameDiff

  private void bindSameDiff(SameDiff sd) {
    if (sdMasks != null) {
      return;
    }
    sdMasks = new LinkedHashMap<>();
    Map<String, float[]> w = new LinkedHashMap<>();
    for (SDVariable v : sd.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE
          && v.getArr() != null
          && v.getArr().rank() == 2
          && core.config().selects(v.name())) {
        INDArray a = v.getArr();
        core.register(v.name(), (int) a.size(0), (int) a.size(1));
        w.put(v.name(), rowMajor(a));
      }
    }
    if (pendingRestore != null) {
      core.restore(pendingRestore);
      pendingRestore = null;
    } else {
      core.initialize(w);
    }
    for (String name : w.keySet()) {
      INDArray a = sd.getArrForVarName(name);
      LayerMask m = core.masks().get(name);
      INDArray mask = toArray(m.toElementMask(), m.rows(), m.cols(), a.dataType());
      sdMasks.put(name, mask);
      a.muli(mask);
    }
    LOG.info(
        "MST bound {} SameDiff variables: {}", sdMasks.size(), core.snapshotRecord().layerDensity);
    applyAttention();
  }

  @Override
  public ListenerVariables requiredVariables(SameDiff sd) {
    return ListenerVariables.empty();
  }

  @Override
  public boolean isActive(Operation operation) {
    return operation == Operation.TRAINING;
  }

  @Override
  public void epochStart(SameDiff sd, At at) {
    bindSameDiff(sd);
  }

  @Override
  public ListenerResponse epochEnd(SameDiff sd, At at, LossCurve lossCurve, long epochTimeMillis) {
    return ListenerResponse.CONTINUE;
  }

  @Override
  public ListenerResponse validationDone(SameDiff sd, At at, long validationTimeMillis) {
    return ListenerResponse.CONTINUE;
  }

  @Override
  public void iterationStart(SameDiff sd, At at, MultiDataSet data, long etlTimeMs) {
    bindSameDiff(sd);
  }

  @Override
  public void operationStart(SameDiff sd, Operation op) {}

  @Override
  public void operationEnd(SameDiff sd, Operation op) {}

  @Override
  public void preOpExecution(SameDiff sd, At at, SameDiffOp op, OpContext opContext) {}

  @Override
  public void opExecution(
      SameDiff sd,
      At at,
      MultiDataSet batch,
      SameDiffOp op,
      OpContext opContext,
      INDArray[] outputs) {
    if (sdMasks == null || !core.isTopologyStep(core.step())) {
      return;
    }
    long t0 = System.nanoTime();
    List<String> outs = op.getOutputsOfOp();
    for (int i = 0; outs != null && i < outs.size() && i < outputs.length; i++) {
      String o = outs.get(i);
      if (o.endsWith("-grad")) {
        String var = o.substring(0, o.length() - 5);
        if (sdMasks.containsKey(var)) {
          capturedGrads.put(var, rowMajor(outputs[i]));
        }
      }
    }
    overheadNanos += System.nanoTime() - t0;
  }

  @Override
  public void activationAvailable(
      SameDiff sd, At at, MultiDataSet batch, SameDiffOp op, String varName, INDArray activation) {}

  @Override
  public void preUpdate(SameDiff sd, At at, Variable v, INDArray update) {
    INDArray m = sdMasks == null ? null : sdMasks.get(v.getName());
    if (m != null) {
      update.muli(m);
      double s = core.updateScale(v.getName());
      float[] c = null;
      if (core.config().isResetBiasCorrection()
          && sd.getTrainingConfig().getUpdater() instanceof org.nd4j.linalg.learning.config.Adam) {
        org.nd4j.linalg.learning.config.Adam a =
            (org.nd4j.linalg.learning.config.Adam) sd.getTrainingConfig().getUpdater();
        c = core.resetCorrection(v.getName(), core.step(), a.getBeta1(), a.getBeta2());
      }
      if (c != null) {
        update.muli(
            toArray(c, (int) update.size(0), (int) update.size(1), update.dataType()).muli(s));
      } else if (s != 1.0) {
        update.muli(s);
      }
    }
  }

  @Override
  public void iterationDone(SameDiff sd, At at, MultiDataSet dataSet, Loss loss) {
    long t0 = System.nanoTime();
    bindSameDiff(sd);
    long t = core.step();
    core.stepDone(t, loss == null ? Double.NaN : loss.totalLoss());
    if (core.isMaskStep(t)) {
      Map<String, float[]> w = new HashMap<>();
      for (String name : sdMasks.keySet()) {
        w.put(name, rowMajor(sd.getArrForVarName(name)));
      }
      Map<String, TopologyUpdater.Result> res =
          core.updateMasks(t, w, capturedGrads.isEmpty() ? null : capturedGrads);
      // listeners may receive SameDiff's internal gradient instance, whose updater map is null
      Map<String, GradientUpdater> updaters =
          attachedSd != null ? attachedSd.getUpdaterMap() : sd.getUpdaterMap();
      if (updaters == null && !warnedNoUpdaters) {
        warnedNoUpdaters = true;
        LOG.warn(
            "MST cannot reach the SameDiff updater state, so optimizer moments of regrown weights"
                + " are not reset; register the listener with MstListener.addTo(sd)");
      }
      for (Map.Entry<String, INDArray> e : sdMasks.entrySet()) {
        TopologyUpdater.Result r = res.get(e.getKey());
        if (r.pruned == 0 && r.grown == 0) {
          continue;
        }
        INDArray a = sd.getArrForVarName(e.getKey());
        e.getValue()
            .assign(toArray(r.mask.toElementMask(), r.mask.rows(), r.mask.cols(), a.dataType()));
        INDArray keep = changedKeep(r, r.mask.rows(), r.mask.cols(), a.dataType());
        a.muli(keep).muli(e.getValue());
        GradientUpdater<?> gu = updaters == null ? null : updaters.get(e.getKey());
        if (gu != null && gu.getState() != null) {
          for (INDArray s : gu.getState().values()) {
            s.muli(keep.reshape(s.shape()).castTo(s.dataType()));
          }
        }
      }
      capturedGrads.clear();
    }
    applyAttention();
    timeStep(t0);
  }
}
