package org.sparseflow.layers.nn;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.ParamInitializer;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.weights.WeightInitXavier;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.NDArrayIndex;
import org.sparseflow.ops.pattern.PatternSpec;

/**
 * Parameter initializer shared by every SparseFlow layer: slices the (rank-1) flat parameter view
 * into the params listed by {@link SparseFlowLayerConf#paramSpecs()} (reshaped 'f' like DL4J's own
 * initializers), and on initialisation fills weights with the layer's weight init, biases with
 * biasInit, gains with 1, masks with a seeded random mask of the configured pattern and density,
 * then zeros every weight outside its mask.
 */
public final class SparseFlowParamInitializer implements ParamInitializer {

  private static final SparseFlowParamInitializer INSTANCE = new SparseFlowParamInitializer();

  public static SparseFlowParamInitializer getInstance() {
    return INSTANCE;
  }

  private SparseFlowParamInitializer() {}

  private static List<ParamSpec> specs(Layer layer) {
    if (!(layer instanceof SparseFlowLayerConf)) {
      throw new IllegalArgumentException(
          "layer = "
              + layer.getClass().getName()
              + " is not a SparseFlow layer; allowed: layers of package org.sparseflow.layers.nn");
    }
    return ((SparseFlowLayerConf) layer).paramSpecs();
  }

  @Override
  public long numParams(NeuralNetConfiguration conf) {
    return numParams(conf.getLayer());
  }

  @Override
  public long numParams(Layer layer) {
    long n = 0;
    for (ParamSpec p : specs(layer)) {
      n += p.length();
    }
    return n;
  }

  @Override
  public List<String> paramKeys(Layer layer) {
    List<String> keys = new ArrayList<>();
    for (ParamSpec p : specs(layer)) {
      keys.add(p.key());
    }
    return keys;
  }

  @Override
  public List<String> weightKeys(Layer layer) {
    return keysOf(layer, ParamSpec.Role.WEIGHT, ParamSpec.Role.PACKED_WEIGHT);
  }

  @Override
  public List<String> biasKeys(Layer layer) {
    return keysOf(layer, ParamSpec.Role.BIAS, ParamSpec.Role.GAIN);
  }

  /** The keys of the layer's params with role {@code a} or {@code b}, in param order. */
  private static List<String> keysOf(Layer layer, ParamSpec.Role a, ParamSpec.Role b) {
    List<String> keys = new ArrayList<>();
    for (ParamSpec p : specs(layer)) {
      if (p.role() == a || p.role() == b) {
        keys.add(p.key());
      }
    }
    return keys;
  }

  @Override
  public boolean isWeightParam(Layer layer, String key) {
    return weightKeys(layer).contains(key);
  }

  @Override
  public boolean isBiasParam(Layer layer, String key) {
    return biasKeys(layer).contains(key);
  }

  @Override
  public Map<String, INDArray> init(
      NeuralNetConfiguration conf, INDArray paramsView, boolean initializeParams) {
    Layer layer = conf.getLayer();
    Map<String, INDArray> out = slice(layer, paramsView);
    for (String k : out.keySet()) {
      conf.addVariable(k);
    }
    if (initializeParams) {
      BaseLayer bl = (BaseLayer) layer;
      long seed =
          conf.getSeed() * 31
              + (layer.getLayerName() == null ? 0 : layer.getLayerName().hashCode());
      for (ParamSpec p : specs(layer)) {
        INDArray v = out.get(p.key());
        switch (p.role()) {
          case WEIGHT:
          case PACKED_WEIGHT:
            (bl.getWeightInitFn() == null ? new WeightInitXavier() : bl.getWeightInitFn())
                .init(p.fanIn(), p.fanOut(), p.shape(), p.order(), v);
            if (p.role() == ParamSpec.Role.PACKED_WEIGHT && p.initRows() < p.shape()[0]) {
              // spare block slots (capacity for blocks MST grows later) hold exact zeros
              // (through the flat row-major view: a 2-D interval of a view at an offset in the
              // flat parameter vector came back without a data buffer)
              v.reshape(v.length())
                  .get(NDArrayIndex.interval(p.initRows() * p.shape()[1], v.length()))
                  .assign(0);
            }
            break;
          case BIAS:
            v.assign(bl.getBiasInit());
            break;
          case GAIN:
            v.assign(1.0);
            break;
          case MASK:
            PatternSpec pat = SparseKernels.parsePattern("pattern", p.pattern());
            SparseKernels.checkShape(
                layer.getLayerName(),
                pat,
                p.shape()[0],
                p.shape()[1],
                p.key().equals("M") ? "nIn" : p.maskedWeight() + " rows",
                p.key().equals("M") ? "nOut" : p.maskedWeight() + " columns");
            seed = seed * 1_000_003L + p.key().hashCode();
            v.assign(
                SparseKernels.randomMask(
                    pat, p.shape()[0], p.shape()[1], p.density(), seed, v.dataType()));
            break;
          default:
            throw new IllegalStateException("unknown role " + p.role());
        }
      }
      HeadMasks.adjustAttentionLayer(layer, out); // no head left without a Q·Kᵀ block
      for (ParamSpec p : specs(layer)) {
        if (p.role() == ParamSpec.Role.MASK) {
          out.get(p.maskedWeight()).muli(out.get(p.key()));
        }
      }
    }
    return out;
  }

  @Override
  public Map<String, INDArray> getGradientsFromFlattened(
      NeuralNetConfiguration conf, INDArray gradientView) {
    return slice(conf.getLayer(), gradientView);
  }

  private Map<String, INDArray> slice(Layer layer, INDArray flat) {
    INDArray view = flat.reshape(flat.length()); // rank-1 in M2.1; the reshape keeps it a view
    long expected = numParams(layer);
    if (view.length() != expected) {
      throw new IllegalStateException(
          "parameter view of layer '"
              + layer.getLayerName()
              + "' has length "
              + view.length()
              + ", expected "
              + expected);
    }
    Map<String, INDArray> out = new LinkedHashMap<>();
    long off = 0;
    for (ParamSpec p : specs(layer)) {
      out.put(
          p.key(),
          view.get(NDArrayIndex.interval(off, off + p.length())).reshape(p.order(), p.shape()));
      off += p.length();
    }
    return out;
  }
}
