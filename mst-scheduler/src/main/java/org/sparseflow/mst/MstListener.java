package org.sparseflow.mst;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.Listener;
import org.nd4j.autodiff.listeners.ListenerResponse;
import org.nd4j.autodiff.listeners.ListenerVariables;
import org.nd4j.autodiff.listeners.Loss;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.listeners.records.LossCurve;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.autodiff.samediff.internal.Variable;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.api.ops.OpContext;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.mst.core.FlopCounter;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.MaskPattern;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Mixed Sparsity Training for DL4J and SameDiff: one listener, one {@link MstCore}.
 *
 * <pre>
 *   MstListener mst = new MstListener(MstConfig.preset("mst").withTotalSteps(2000));
 *   net.setListeners(mst);      // MultiLayerNetwork / ComputationGraph
 *   mst.addTo(sd);              // or SameDiff (not sd.addListeners: the listener needs the graph's
 * updaters)
 * </pre>
 *
 * This class is the facade both frameworks call; the work is done by a DL4J adapter ({@link
 * Dl4jAdapter}), a SameDiff adapter ({@link SameDiffAdapter}) and the update scaler they share
 * ({@link UpdateScaler}).
 *
 * <p>Deviation from the authors' code: the optimizer step is not skipped on topology steps (DL4J
 * offers no hook to skip it); RigL does not skip it either.
 */
public final class MstListener implements TrainingListener, Listener {

  /** Applies an attention pattern string to attention layer i. */
  public interface AttentionApplier {
    void apply(int layer, String pattern);
  }

  private final MstCore core;
  private final Dl4jAdapter dl4j;
  private final SameDiffAdapter sameDiff;
  private MstState pendingRestore;
  private AttentionApplier attentionApplier;
  private List<String> appliedPatterns;
  // overhead measurement
  private long overheadNanos;
  private long lastIterEnd;
  private long stepNanos;
  private long timedSteps;

  public MstListener(MstConfig configWithTotalSteps) {
    this.core = new MstCore(configWithTotalSteps);
    UpdateScaler scaler = new UpdateScaler(core);
    this.dl4j = new Dl4jAdapter(this, scaler);
    this.sameDiff = new SameDiffAdapter(this, scaler);
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
    sameDiff.attach(sd);
    sd.addListeners(this);
    return this;
  }

  /**
   * The masks a new listener with {@code config} starts the weights of {@code sd} it selects from,
   * each as a mask of the weight's [nIn, nOut] in MST's pattern (all blocks when the schedule
   * starts dense). Packing with them ({@code Sparsify.apply(cfg, sd, masks)} with {@code storage:
   * packed}) makes a packed run start where a masked run starts, dense warm-up included.
   *
   * @param config a config with its run length set ({@link MstConfig#withTotalSteps})
   */
  public static Map<String, SparseMask> firstMasks(MstConfig config, SameDiff sd) {
    return asSparseMasks(config, SameDiffAdapter.firstMasks(config, sd));
  }

  /**
   * The masks a new listener with {@code config} starts the weights of DL4J {@code model} it
   * selects from (masked, stock or packed weights), each as a mask of the weight's [nIn, nOut] in
   * MST's pattern (all blocks when the schedule starts dense). Building packed layers with these
   * layouts ({@code blockLayout}) and the masked run's values makes a packed run start where a
   * masked run starts.
   *
   * @param config a config with its run length set ({@link MstConfig#withTotalSteps})
   */
  public static Map<String, SparseMask> firstMasks(MstConfig config, Model model) {
    return asSparseMasks(config, Dl4jAdapter.firstMasks(config, model));
  }

  private static Map<String, SparseMask> asSparseMasks(
      MstConfig config, Map<String, LayerMask> masks) {
    PatternSpec spec = PatternSpec.parse(config.getPattern());
    Map<String, SparseMask> out = new LinkedHashMap<>();
    for (LayerMask m : masks.values()) {
      if (spec.getKind() == MaskPattern.Kind.BLOCK) {
        // block units are the row-major blocks: no element-sized expansion
        boolean[] kept = new boolean[m.unitCount()];
        m.activeBits().stream().forEach(u -> kept[u] = true);
        out.put(m.name(), BlockMask.of(m.rows(), m.cols(), spec.getBlockSize(), kept));
      } else {
        INDArray dense = Nd4j.create(m.toElementMask(), new long[] {m.rows(), m.cols()}, 'c');
        out.put(m.name(), spec.fromDense(dense));
      }
    }
    return out;
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

  // ------------------------------------------------------------------ shared by the adapters

  boolean hasAttentionApplier() {
    return attentionApplier != null;
  }

  /** Starts the core from the saved state given to {@link #resume}, else from new masks. */
  void initializeOrRestore(Map<String, float[]> weights) {
    if (!restorePending()) {
      core.initialize(weights);
    }
  }

  /** Restores the core from the saved state given to {@link #resume}, if any; says whether. */
  boolean restorePending() {
    if (pendingRestore == null) {
      return false;
    }
    core.restore(pendingRestore);
    pendingRestore = null;
    return true;
  }

  /**
   * The model to train from the next step on (DL4J): {@code model} itself, or, when a new phase of
   * the schedule wants other block slots for packed weights ({@code storage = packed}), a copy
   * rebuilt with them. DL4J fixes a network's parameter count when it is built, so MST cannot
   * resize packed weights in place; the copy carries the parameters, optimizer state, iteration and
   * epoch counts and listeners over, and this listener follows it. Call it after each {@code fit}
   * call and train, evaluate and save the model it returns:
   *
   * <pre>
   *   for (DataSet batch : batches) {
   *     net.fit(batch);
   *     net = (MultiLayerNetwork) mst.nextModel(net);
   *   }
   * </pre>
   *
   * With masked storage (or SameDiff) it always returns {@code model}. A packed weight that MST
   * grows beyond its slots without this call stops training with an error naming it.
   */
  public Model nextModel(Model model) {
    return dl4j.nextModel(model);
  }

  /** Applies every attention pattern again (after the attention layers were rebuilt). */
  void reapplyAttention() {
    appliedPatterns = null;
    applyAttention();
  }

  /** Applies the attention patterns of the current step where they changed. */
  void applyAttention() {
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

  // ------------------------------------------------------------------ DL4J TrainingListener

  @Override
  public void onEpochStart(Model model) {
    dl4j.bind(model);
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
    dl4j.onGradientCalculation(model);
    overheadNanos += System.nanoTime() - t0;
  }

  @Override
  public void iterationDone(Model model, int iteration, int epoch) {
    long t0 = System.nanoTime();
    dl4j.iterationDone(model);
    timeStep(t0);
  }

  // ------------------------------------------------------------------ SameDiff Listener

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
    sameDiff.bind(sd);
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
    long t0 = System.nanoTime();
    sameDiff.iterationStart(sd);
    overheadNanos += System.nanoTime() - t0;
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
    long t0 = System.nanoTime();
    sameDiff.opExecution(op, outputs);
    overheadNanos += System.nanoTime() - t0;
  }

  @Override
  public void activationAvailable(
      SameDiff sd, At at, MultiDataSet batch, SameDiffOp op, String varName, INDArray activation) {}

  @Override
  public void preUpdate(SameDiff sd, At at, Variable v, INDArray update) {
    sameDiff.preUpdate(sd, v.getName(), update);
  }

  @Override
  public void iterationDone(SameDiff sd, At at, MultiDataSet dataSet, Loss loss) {
    long t0 = System.nanoTime();
    sameDiff.iterationDone(sd, loss == null ? Double.NaN : loss.totalLoss());
    timeStep(t0);
  }
}
