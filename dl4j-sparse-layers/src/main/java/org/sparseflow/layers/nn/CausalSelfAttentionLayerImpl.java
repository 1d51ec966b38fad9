package org.sparseflow.layers.nn;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.activations.impl.ActivationIdentity;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.sparseflow.ops.attention.AttentionPattern;
import org.sparseflow.ops.attention.BlockLayout;
import org.sparseflow.ops.attention.SparseAttention;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Implementation of {@link CausalSelfAttentionLayer}; attention runs in {@link SparseAttention}.
 */
public class CausalSelfAttentionLayerImpl extends SparseFlowLayerImpl<CausalSelfAttentionLayer>
    implements SparseWeightLayer, SparseAttentionLayer {
  private static final long serialVersionUID = 1L;

  private final MaskedWeights masked =
      new MaskedWeights(List.of("Wq", "Wk", "Wv", "Wo"), List.of("Mq", "Mk", "Mv", "Mo"));
  private final Map<Integer, BlockLayout> layouts = new HashMap<>();
  private final ForwardCache<Fwd> cache = new ForwardCache<>();
  private AttentionPattern pattern;

  public CausalSelfAttentionLayerImpl(NeuralNetConfiguration conf, DataType dataType) {
    super(conf, dataType);
  }

  /** Everything the forward pass computed that the backward pass needs. */
  private record Fwd(
      long b,
      long t,
      INDArray x2,
      INDArray q,
      INDArray k,
      INDArray v,
      SparseAttention.Result att,
      MaskedDenseAttention.Fwd dense,
      INDArray o2,
      INDArray z2,
      BlockLayout layout,
      double scale) {}

  /**
   * Which implementation computes attention: the samediff-ops block-sparse kernel ("kernel") or an
   * ND4J dense computation restricted to the same layout ("dense"). System property
   * sparseflow.attention.
   */
  static boolean useKernel() {
    return "kernel".equalsIgnoreCase(System.getProperty("sparseflow.attention", DEFAULT_ATTENTION));
  }

  /** Default implementation: the sparse kernel. */
  static final String DEFAULT_ATTENTION = "kernel";

  private final Map<Long, INDArray> keepMasks = new HashMap<>();
  private BlockLayout keepLayout;

  private INDArray keepMask(BlockLayout layout, long b) {
    if (keepLayout != layout) {
      keepMasks.clear();
      keepLayout = layout;
    }
    return keepMasks.computeIfAbsent(b, bb -> MaskedDenseAttention.keep(layout, bb, dataType));
  }

  private boolean sparseProjections() {
    return layerConf().getProjectionPattern() != null;
  }

  private boolean packedProjections() {
    return layerConf().packedProjections();
  }

  private final PackedProjections packed = new PackedProjections(this::layerConf);

  /** x W_p + b_p: the masked kernels, or the packed ones for packed projections. */
  private INDArray project(String p, INDArray x) {
    if (packedProjections()) {
      return packed.forward("W" + p, x, getParam("W" + p), bias(p));
    }
    return SparseKernels.linearForward(x, getParam("W" + p), bias(p), mask(p));
  }

  private SparseMask mask(String p) {
    return sparseProjections() && !packedProjections()
        ? masked.sparseMask("W" + p, getParam("M" + p), layerConf().getProjectionPattern())
        : null;
  }

  private INDArray bias(String p) {
    return layerConf().hasBias() ? getParam("b" + p) : null;
  }

  /** The block layout for sequence length t (cached per t). */
  BlockLayout layout(int t) {
    BlockLayout l = layouts.get(t);
    if (l != null) {
      return l;
    }
    CausalSelfAttentionLayer c = layerConf();
    if (pattern == null) {
      pattern = SparseKernels.parseAttentionPattern("attentionPattern", c.getAttentionPattern());
    }
    int bs = c.getBlockSize();
    if (t % bs != 0) {
      if (!pattern.hasDenseComponent()) {
        throw new IllegalArgumentException(
            LayerValidation.where(c.getLayerName())
                + "sequence length T = "
                + t
                + " is not divisible by blockSize = "
                + bs
                + " (attentionPattern '"
                + c.getAttentionPattern()
                + "'); allowed: T a multiple of blockSize (pad the sequence or choose a blockSize"
                + " dividing T)");
      }
      bs = t; // dense causal attention: one block
    }
    l = BlockLayout.of(pattern, t, bs, c.getNHeads());
    layouts.put(t, l);
    return l;
  }

  /** [B*T, H*D] rows -> contiguous [B, H, T, D]. */
  private static INDArray heads(INDArray a2, long b, long t, long h, long d) {
    return a2.reshape('c', b, t, h, d).permute(0, 2, 1, 3).dup('c');
  }

  private static INDArray rows(INDArray a4, long b, long t, long n) {
    return a4.permute(0, 2, 1, 3).dup('c').reshape('c', b * t, n);
  }

  private boolean nwc() {
    return layerConf().getDataFormat() == RNNFormat.NWC;
  }

  /**
   * Recurrent [B, n, T] (NCW) or [B, T, n] (NWC) -> rows [B*T, n] ('c'; NWC in 'c' order: a view,
   * no copy).
   */
  private INDArray toRows(INDArray a3) {
    INDArray a = a3.castTo(dataType);
    long b = a.size(0), t = a.size(nwc() ? 1 : 2), n = a.size(nwc() ? 2 : 1);
    return nwc() ? a.reshape('c', b * t, n) : a.permute(0, 2, 1).dup('c').reshape('c', b * t, n);
  }

  /**
   * Rows [B*T, n] -> the layer's recurrent layout: NCW as a new 'f' array, NWC as [B, T, n] in 'c'
   * order (a view of row-major rows, no copy).
   */
  private INDArray fromRows(INDArray rows, long b, long t) {
    long n = rows.size(1);
    if (nwc()) {
      return rows.reshape('c', b, t, n);
    }
    return rows.reshape('c', b, t, n).permute(0, 2, 1).dup('f');
  }

  private Fwd forward(boolean training, LayerWorkspaceMgr mgr) {
    startForward(training, mgr);
    CausalSelfAttentionLayer c = layerConf();
    if (input.rank() != 3 || input.size(nwc() ? 2 : 1) != c.getNIn()) {
      throw new IllegalArgumentException(
          LayerValidation.where(c.getLayerName())
              + "input shape = "
              + Arrays.toString(input.shape())
              + " is not allowed; allowed: "
              + (nwc()
                  ? "[minibatch, T, nIn = " + c.getNIn() + "] (NWC)"
                  : "[minibatch, nIn = " + c.getNIn() + ", T] (NCW)"));
    }
    long b = input.size(0),
        t = input.size(nwc() ? 1 : 2),
        n = c.getNOut(),
        h = c.getNHeads(),
        d = n / h;
    BlockLayout layout = layout((int) t);
    double scale = SparseAttention.defaultScale(d);
    INDArray x2 = toRows(input);
    INDArray q = heads(project("q", x2), b, t, h, d);
    INDArray k = heads(project("k", x2), b, t, h, d);
    INDArray v = heads(project("v", x2), b, t, h, d);
    SparseAttention.Result att = null;
    MaskedDenseAttention.Fwd dense = null;
    INDArray out;
    if (useKernel()) {
      // outputs in the layer's workspace (SparseAttention.forward would allocate them detached:
      // fresh native
      // memory and page faults on every call)
      att =
          new SparseAttention.Result(
              Nd4j.createUninitialized(dataType, b, h, t, d),
              Nd4j.createUninitialized(dataType, b, h, t));
      SparseAttention.forwardInto(q, k, v, layout, scale, att.out(), att.lse());
      out = att.out();
    } else {
      dense = MaskedDenseAttention.forward(q, k, v, keepMask(layout, b), scale);
      out = dense.out();
    }
    INDArray o2 = rows(out, b, t, n);
    INDArray z2 = project("o", o2);
    return new Fwd(b, t, x2, q, k, v, att, dense, o2, z2, layout, scale);
  }

  @Override
  public INDArray activate(boolean training, LayerWorkspaceMgr mgr) {
    // training: compute in the ACTIVATIONS workspace and keep the state for backprop
    return activateCaching(training, mgr, cache, ws -> cachingForward(training, mgr, ws));
  }

  /**
   * The forward pass of {@link #activate} inside its workspace: the output, and the state kept for
   * backprop when {@code ws} is open (training).
   */
  private INDArray cachingForward(boolean training, LayerWorkspaceMgr mgr, MemoryWorkspace ws) {
    Fwd f = forward(training, mgr);
    INDArray a2 =
        identity() ? f.z2 : layerConf().getActivationFn().getActivation(f.z2.dup(), training);
    INDArray out = fromRows(a2, f.b, f.t);
    if (ws != null) {
      cache.put(input, f);
    }
    return out;
  }

  private boolean identity() {
    return layerConf().getActivationFn() instanceof ActivationIdentity;
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr mgr) {
    assertInputSet(true);
    Fwd f = cache.take(input);
    if (f == null) {
      f = forward(true, mgr);
    }
    CausalSelfAttentionLayer c = layerConf();
    long n = c.getNOut(), h = c.getNHeads(), d = n / h;
    INDArray eps2 = toRows(epsilon);
    INDArray delta = identity() ? eps2 : c.getActivationFn().backprop(f.z2.dup(), eps2).getFirst();
    INDArray dO2 = backLinear("o", f.o2, delta);
    INDArray dOut = heads(dO2.dup('c'), f.b, f.t, h, d);
    INDArray dq, dk, dv;
    if (f.att != null) {
      dq = Nd4j.createUninitialized(dataType, f.b, h, f.t, d);
      dk = Nd4j.createUninitialized(dataType, f.b, h, f.t, d);
      dv = Nd4j.createUninitialized(dataType, f.b, h, f.t, d);
      SparseAttention.backwardInto(
          f.q, f.k, f.v, f.att.out(), f.att.lse(), dOut, f.layout, f.scale, dq, dk, dv);
    } else {
      MaskedDenseAttention.Grads g =
          MaskedDenseAttention.backward(f.q, f.k, f.v, f.dense, dOut.dup('c'), f.scale);
      dq = g.dq();
      dk = g.dk();
      dv = g.dv();
    }
    INDArray dx2 = backLinear("q", f.x2, rows(dq, f.b, f.t, n));
    dx2.addi(backLinear("k", f.x2, rows(dk, f.b, f.t, n)));
    dx2.addi(backLinear("v", f.x2, rows(dv, f.b, f.t, n)));
    INDArray eps = fromRows(dx2, f.b, f.t);
    Gradient ret = new DefaultGradient();
    for (String key : conf.variables()) {
      if (key.startsWith("M")) {
        gradientViews.get(key).assign(0);
      }
      ret.gradientForVariable().put(key, gradientViews.get(key));
    }
    weightNoiseParams.clear();
    return new Pair<>(
        ret, backpropDropOutIfPresent(mgr.leverageTo(ArrayType.ACTIVATION_GRAD, eps)));
  }

  private INDArray backLinear(String p, INDArray x, INDArray dy) {
    String w = "W" + p;
    if (packedProjections()) {
      INDArray dx = packed.backward(w, x, getParam(w), dy, gradientViews.get(w));
      if (layerConf().hasBias()) {
        INDArray db = gradientViews.get("b" + p);
        db.assign(
            Nd4j.createFromArray(SparseKernels.columnSums(dy))
                .castTo(db.dataType())
                .reshape(db.shape()));
      }
      return dx;
    }
    return SparseKernels.linearBackward(
        x,
        getParam(w),
        mask(p),
        dy,
        gradientViews.get(w),
        layerConf().hasBias() ? gradientViews.get("b" + p) : null,
        sparseProjections() ? masked.denseBuffer(w, getParam(w)) : null);
  }

  // ---------------------------------------------------------------- SparseAttentionLayer

  @Override
  public String attentionPattern() {
    return layerConf().getAttentionPattern();
  }

  @Override
  public void setAttentionPattern(String attentionPattern) {
    AttentionPattern parsed =
        SparseKernels.parseAttentionPattern("attentionPattern", attentionPattern);
    layerConf().setAttentionPattern(attentionPattern);
    pattern = parsed;
    layouts.clear();
    keepMasks.clear();
    keepLayout = null;
  }

  // ---------------------------------------------------------------- SparseWeightLayer

  @Override
  public List<String> sparseWeightKeys() {
    return sparseProjections() ? masked.weightKeys() : List.of();
  }

  @Override
  public String maskKey(String weightKey) {
    if (!sparseProjections()) {
      throw new IllegalArgumentException(
          "weightKey = '"
              + weightKey
              + "': layer '"
              + layerConf().getLayerName()
              + "' has dense projections (projectionPattern = null); allowed: none");
    }
    return masked.maskKey(weightKey);
  }

  @Override
  public String pattern(String weightKey) {
    maskKey(weightKey);
    return layerConf().getProjectionPattern();
  }

  @Override
  public PackedLayout packedLayout(String weightKey) {
    masked.maskKey(weightKey);
    return packed.layout(weightKey);
  }

  @Override
  public PackedNmLayout packedNmLayout(String weightKey) {
    masked.maskKey(weightKey);
    return packed.nmLayout(weightKey);
  }

  @Override
  public int packedSlots(String weightKey) {
    masked.maskKey(weightKey);
    return packed.slots(weightKey, getParam(weightKey));
  }

  @Override
  public void setPackedLayout(String weightKey, PackedLayout layout) {
    masked.maskKey(weightKey);
    packed.setLayout(weightKey, layout, getParam(weightKey));
  }

  @Override
  public void setGrowthScores(String weightKey, double[] squares) {
    masked.maskKey(weightKey);
    packed.setGrowthScores(weightKey, squares);
  }

  @Override
  public void setDenseGradientRequested(boolean requested) {
    if (requested && packedProjections()) {
      throw new UnsupportedOperationException(
          PackedStorage.noMaskTools(layerConf().getLayerName()));
    }
    masked.setDenseRequested(requested);
  }

  @Override
  public boolean isDenseGradientRequested() {
    return masked.isDenseRequested();
  }

  @Override
  public INDArray lastWeightGradient(String weightKey) {
    maskKey(weightKey);
    return masked.lastGradient(weightKey, gradientViews);
  }

  @Override
  public void applyMasks() {
    if (sparseProjections() && !packedProjections()) {
      masked.apply(this::getParam);
    }
  }
}
