package org.sparseflow.mst.dl4j;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.api.TrainingConfig;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.api.UpdaterStates;
import org.sparseflow.mst.core.MstConfig;

/**
 * Finds the sparse-able weights of a DL4J MultiLayerNetwork / ComputationGraph and gives MST what
 * it needs: live weight views, the raw (dense) gradient, the optional mask param and
 * optimizer-state reset.
 *
 * <p>Two kinds of layers are handled:
 *
 * <ul>
 *   <li>SparseFlow masked layers, found through dl4j-sparse-layers' {@link SparseParams} (also
 *       inside wrappers): weight and mask param from the {@link SparseParam}, the dense gradient on
 *       request via {@link SparseParam#setDenseGradientRequested} / {@link SparseParam#gradient};
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

    /** The layer that holds the weight (a wrapper's underlying layer). */
    final Layer impl;

    public final String key;
    public final INDArray weight;

    /** The layer's own 0/1 mask param, or null for stock layers. */
    public final INDArray maskParam;

    /** MST's mask, same shape and type as the weight. */
    public final INDArray mask;

    public final int rows;
    public final int cols;

    /** The SparseFlow layer's weight, or null for stock layers. */
    final SparseParam sparse;

    /** A stock layer's weight. */
    Binding(String name, Layer layer, String key, INDArray weight) {
      this(name, layer, layer, key, weight, null, null);
    }

    /** A SparseFlow layer's weight. */
    Binding(SparseParam p) {
      this(p.name(), p.modelLayer(), p.layer(), p.weightKey(), p.weight(), p.mask(), p);
    }

    private Binding(
        String name,
        Layer layer,
        Layer impl,
        String key,
        INDArray weight,
        INDArray maskParam,
        SparseParam sparse) {
      this.name = name;
      this.layer = layer;
      this.impl = impl;
      this.key = key;
      this.weight = weight;
      this.maskParam = maskParam;
      this.sparse = sparse;
      this.rows = (int) weight.size(0);
      this.cols = (int) weight.size(1);
      this.mask = Nd4j.ones(weight.dataType(), weight.shape());
    }

    /** Raw dense gradient of the last backward (valid in onGradientCalculation), or null. */
    public INDArray denseGradient(Model model) {
      if (sparse != null) {
        return sparse.gradient();
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
      return Dl4jWeights.adamBetas(key, impl, layer);
    }

    public void requestDense(boolean on) {
      if (sparse != null) {
        sparse.setDenseGradientRequested(on);
      }
    }

    /**
     * Zeroes the gradient handed to the updater at pruned positions (stock layers; sparse layers do
     * it).
     */
    public void maskGradient(Model model) {
      if (sparse == null && model.gradient() != null) {
        INDArray g = model.gradient().gradientForVariable().get(name);
        if (g != null) {
          g.muli(mask);
        }
      }
    }
  }

  private Dl4jWeights() {}

  /**
   * β1, β2 of the Adam updater of param {@code key}, asked of each layer in turn (a wrapper's
   * configuration may not know the wrapped layer's params), or null when it is not Adam.
   */
  public static double[] adamBetas(String key, Layer... layers) {
    for (Layer l : layers) {
      Object conf = l.conf().getLayer();
      if (conf instanceof TrainingConfig) {
        try {
          IUpdater u = ((TrainingConfig) conf).getUpdaterByParam(key);
          if (u instanceof Adam a) {
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

  /** All weights selected by the config, in layer order. */
  public static List<Binding> find(Model model, MstConfig config) {
    Map<Layer, List<SparseParam>> sparse = new IdentityHashMap<>();
    for (SparseParam p : SparseParams.findMasked(model)) {
      sparse.computeIfAbsent(p.modelLayer(), k -> new ArrayList<>()).add(p);
    }
    Map<Layer, Boolean> packed = new IdentityHashMap<>();
    for (PackedSparseParam p : SparseParams.findPacked(model)) {
      packed.put(p.modelLayer(), true); // MST reaches packed weights through PackedSparseParam
    }
    List<Binding> out = new ArrayList<>();
    for (Layer l : SparseParams.layers(model)) {
      if (packed.containsKey(l)) {
        continue;
      }
      // a SparseFlow layer (also inside a wrapper such as TimeDistributed) must be driven through
      // its own mask param, else MST would only zero weights and the layer would keep running its
      // kernels at full density
      if (sparse.containsKey(l)) {
        for (SparseParam p : sparse.get(l)) {
          if (config.selects(p.name())) {
            out.add(new Binding(p));
          }
        }
        continue;
      }
      String prefix = SparseParams.paramPrefix(model, l);
      // qualified: the imported Layer is the runtime layer (nn.api)
      org.deeplearning4j.nn.conf.layers.Layer conf = l.conf().getLayer();
      for (Map.Entry<String, INDArray> e : l.paramTable().entrySet()) {
        String name = prefix + "_" + e.getKey();
        if (e.getValue().rank() == 2
            && conf.initializer().isWeightParam(conf, e.getKey())
            && config.selects(name)) {
          out.add(new Binding(name, l, e.getKey(), e.getValue()));
        }
      }
    }
    return out;
  }

  /**
   * Multiplies the optimizer state (Adam m and v, momentum, ...) of a weight by {@code keep} (1 =
   * keep, 0 = reset), element-wise. {@code keep} has the weight's shape.
   *
   * @return number of state arrays touched (0 for stateless updaters such as SGD)
   */
  public static int scaleUpdaterState(Model model, Binding b, INDArray keep) {
    List<INDArray> states = UpdaterStates.views(model, b.layer, b.key, b.weight, false);
    for (INDArray s : states) {
      s.muli(keep.castTo(s.dataType()));
    }
    return states.size();
  }
}
