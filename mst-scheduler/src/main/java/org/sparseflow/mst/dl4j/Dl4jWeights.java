package org.sparseflow.mst.dl4j;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.layers.wrapper.BaseWrapperLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.updater.BaseMultiLayerUpdater;
import org.deeplearning4j.nn.updater.UpdaterBlock;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.nd4j.linalg.learning.GradientUpdater;
import org.sparseflow.mst.core.MstConfig;

/**
 * Finds the sparse-able weights of a DL4J MultiLayerNetwork / ComputationGraph and gives MST what
 * it needs: live weight views, the raw (dense) gradient, the optional mask param and
 * optimizer-state reset.
 *
 * <p>Two kinds of layers are handled:
 *
 * <ul>
 *   <li>SparseFlow masked layers (dl4j-sparse-layers {@code SparseWeightLayer}, detected by method
 *       names so this module has no compile-time dependency on them): weights from {@code
 *       sparseWeightKeys()}, mask param from {@code maskKey()}, the dense gradient on request via
 *       {@code setDenseGradientRequested/lastWeightGradient};
 *   <li>any stock layer: every rank-2 weight param (per the layer's ParamInitializer) whose name
 *       "&lt;layer&gt;_&lt;param&gt;" is selected by the config; its backward already gives the
 *       dense gradient, which the listener reads and then masks in place before the updater sees
 *       it.
 * </ul>
 */
public final class Dl4jWeights {

  /** One sparse weight of a DL4J model. */
  public static final class Binding {
    public final String name;

    /**
     * The model's layer (a wrapper such as TimeDistributed stays the wrapper: the updater knows it
     * by it).
     */
    public final Layer layer;

    /**
     * The layer that holds the weight and, for SparseFlow layers, the mask (a wrapper's underlying
     * layer).
     */
    final Layer impl;

    public final String key;
    public final INDArray weight;

    /** The layer's own 0/1 mask param, or null for stock layers. */
    public final INDArray maskParam;

    /** MST's mask, same shape and type as the weight. */
    public final INDArray mask;

    public final int rows;
    public final int cols;
    final boolean sparseLayer;

    Binding(
        String name,
        Layer layer,
        String key,
        INDArray weight,
        INDArray maskParam,
        boolean sparseLayer) {
      this(name, layer, layer, key, weight, maskParam, sparseLayer);
    }

    Binding(
        String name,
        Layer layer,
        Layer impl,
        String key,
        INDArray weight,
        INDArray maskParam,
        boolean sparseLayer) {
      this.name = name;
      this.layer = layer;
      this.impl = impl;
      this.key = key;
      this.weight = weight;
      this.maskParam = maskParam;
      this.sparseLayer = sparseLayer;
      this.rows = (int) weight.size(0);
      this.cols = (int) weight.size(1);
      this.mask = Nd4j.ones(weight.dataType(), weight.shape());
    }

    /** Raw dense gradient of the last backward (valid in onGradientCalculation), or null. */
    public INDArray denseGradient(Model model) {
      if (sparseLayer) {
        return (INDArray) invoke(impl, "lastWeightGradient", new Class<?>[] {String.class}, key);
      }
      return model.gradient() == null ? null : model.gradient().gradientForVariable().get(name);
    }

    private double[] adamBetas;
    private boolean adamBetasKnown;

    /**
     * β1, β2 of the Adam updater of this weight, or null when its updater is not Adam (looked up
     * once).
     */
    public double[] adamBetas() {
      if (!adamBetasKnown) {
        adamBetas = findAdamBetas();
        adamBetasKnown = true;
      }
      return adamBetas;
    }

    private double[] findAdamBetas() {
      for (Layer l : new Layer[] {impl, layer}) {
        Object conf = l.conf().getLayer();
        if (conf instanceof org.deeplearning4j.nn.api.TrainingConfig) {
          try {
            org.nd4j.linalg.learning.config.IUpdater u =
                ((org.deeplearning4j.nn.api.TrainingConfig) conf).getUpdaterByParam(key);
            if (u instanceof org.nd4j.linalg.learning.config.Adam) {
              org.nd4j.linalg.learning.config.Adam a = (org.nd4j.linalg.learning.config.Adam) u;
              return new double[] {a.getBeta1(), a.getBeta2()};
            }
            return null;
          } catch (RuntimeException e) {
            // wrapper configurations may not know the wrapped layer's params: try the next one
          }
        }
      }
      return null;
    }

    public void requestDense(boolean on) {
      if (sparseLayer) {
        invoke(impl, "setDenseGradientRequested", new Class<?>[] {boolean.class}, on);
      }
    }

    /**
     * Zeroes the gradient handed to the updater at pruned positions (stock layers; sparse layers do
     * it).
     */
    public void maskGradient(Model model) {
      if (!sparseLayer && model.gradient() != null) {
        INDArray g = model.gradient().gradientForVariable().get(name);
        if (g != null) {
          g.muli(mask);
        }
      }
    }
  }

  private Dl4jWeights() {}

  /** All weights selected by the config, in layer order. */
  public static List<Binding> find(Model model, MstConfig config) {
    List<Binding> out = new ArrayList<>();
    for (Layer l : layers(model)) {
      String prefix = prefix(model, l);
      // a SparseFlow layer inside a wrapper (TimeDistributed, ...) must be driven through its own
      // mask param,
      // else MST would only zero weights and the layer would keep running its kernels at full
      // density
      Layer impl = l;
      while (impl instanceof BaseWrapperLayer w && !hasMethod(impl, "sparseWeightKeys")) {
        impl = w.getUnderlying();
      }
      if (hasMethod(impl, "sparseWeightKeys")) {
        @SuppressWarnings("unchecked")
        List<String> keys = (List<String>) invoke(impl, "sparseWeightKeys", new Class<?>[0]);
        for (String k : keys) {
          String name = prefix + "_" + k;
          if (config.selects(name)) {
            String mk = (String) invoke(impl, "maskKey", new Class<?>[] {String.class}, k);
            out.add(new Binding(name, l, impl, k, impl.getParam(k), impl.getParam(mk), true));
          }
        }
        continue;
      }
      org.deeplearning4j.nn.conf.layers.Layer conf = l.conf().getLayer();
      for (Map.Entry<String, INDArray> e : l.paramTable().entrySet()) {
        String name = prefix + "_" + e.getKey();
        if (e.getValue().rank() == 2
            && conf.initializer().isWeightParam(conf, e.getKey())
            && config.selects(name)) {
          out.add(new Binding(name, l, e.getKey(), e.getValue(), null, false));
        }
      }
    }
    return out;
  }

  static Layer[] layers(Model model) {
    if (model instanceof MultiLayerNetwork) {
      return ((MultiLayerNetwork) model).getLayers();
    }
    if (model instanceof ComputationGraph) {
      return ((ComputationGraph) model).getLayers();
    }
    throw new IllegalArgumentException(
        "model = "
            + model.getClass().getName()
            + " is not supported; allowed: MultiLayerNetwork, ComputationGraph");
  }

  static String prefix(Model model, Layer l) {
    if (model instanceof ComputationGraph) {
      return l.conf().getLayer().getLayerName();
    }
    return String.valueOf(l.getIndex());
  }

  /**
   * Multiplies the optimizer state (Adam m and v, momentum, ...) of a weight by {@code keep} (1 =
   * keep, 0 = reset), element-wise. {@code keep} has the weight's shape.
   *
   * @return number of state arrays touched (0 for stateless updaters such as SGD)
   */
  public static int scaleUpdaterState(Model model, Binding b, INDArray keep) {
    Object u =
        model instanceof MultiLayerNetwork
            ? ((MultiLayerNetwork) model).getUpdater(false)
            : ((ComputationGraph) model).getUpdater(false);
    if (!(u instanceof BaseMultiLayerUpdater)) {
      return 0;
    }
    // flat order of the param inside the updater view equals the weight view's ordering
    INDArray keepFlat = Nd4j.toFlattened(b.weight.ordering(), keep);
    int touched = 0;
    for (UpdaterBlock block : ((BaseMultiLayerUpdater<?>) u).getUpdaterBlocks()) {
      for (UpdaterBlock.ParamState ps : block.getLayersAndVariablesInBlock()) {
        if (ps.getLayer() != b.layer || !ps.getParamName().equals(b.key)) {
          continue;
        }
        GradientUpdater<?> gu = block.getGradientUpdater();
        if (gu == null || gu.getState() == null) {
          continue;
        }
        long off = ps.getParamOffsetStart() - block.getParamOffsetStart();
        long len = ps.getParamOffsetEnd() - ps.getParamOffsetStart();
        for (INDArray s : gu.getState().values()) {
          INDArray slice =
              s.rank() == 1
                  ? s.get(NDArrayIndex.interval(off, off + len))
                  : s.reshape(s.length()).get(NDArrayIndex.interval(off, off + len));
          slice.muli(keepFlat.castTo(slice.dataType()));
          touched++;
        }
      }
    }
    return touched;
  }

  /**
   * Layers whose configuration has {@code setAttentionPattern(String)} (SparseFlow
   * CausalSelfAttentionLayer).
   */
  public static List<Layer> attentionLayers(Model model) {
    List<Layer> out = new ArrayList<>();
    for (Layer l : layers(model)) {
      if (hasMethod(l.conf().getLayer(), "setAttentionPattern")) {
        out.add(l);
      }
    }
    return out;
  }

  /**
   * Switches an attention layer to a pattern: sets it in the layer configuration and drops the
   * implementation's cached pattern/layouts (fields "pattern" and "layouts", if present) so the
   * next forward pass rebuilds them.
   */
  public static void setAttentionPattern(Layer l, String pattern) {
    invoke(l.conf().getLayer(), "setAttentionPattern", new Class<?>[] {String.class}, pattern);
    for (Class<?> c = l.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
      for (java.lang.reflect.Field f : c.getDeclaredFields()) {
        try {
          if (f.getName().equals("pattern")
              && !java.lang.reflect.Modifier.isFinal(f.getModifiers())) {
            f.setAccessible(true);
            f.set(l, null);
          } else if (f.getName().equals("layouts") && Map.class.isAssignableFrom(f.getType())) {
            f.setAccessible(true);
            ((Map<?, ?>) f.get(l)).clear();
          }
        } catch (ReflectiveOperationException | RuntimeException e) {
          throw new IllegalStateException(
              "cannot reset the cached attention layout of " + c.getName(), e);
        }
      }
    }
  }

  static boolean hasMethod(Object o, String name) {
    for (Method m : o.getClass().getMethods()) {
      if (m.getName().equals(name)) {
        return true;
      }
    }
    return false;
  }

  static Object invoke(Object o, String name, Class<?>[] types, Object... args) {
    try {
      return o.getClass().getMethod(name, types).invoke(o, args);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot call " + name + " on " + o.getClass().getName(), e);
    }
  }
}
