package org.sparseflow.layers.spi;

import com.google.auto.service.AutoService;
import java.util.ArrayList;
import java.util.Map;
import org.deeplearning4j.nn.conf.GradientNormalization;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.SelfAttentionLayer;
import org.deeplearning4j.nn.weights.WeightInit;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;

/**
 * Built-in: DL4J's {@link SelfAttentionLayer} (bidirectional, a SameDiffLayer with the M2.1
 * 2x-gradient bug) -> {@link CausalSelfAttentionLayer}, only when the config sets {@code
 * attention.replaceSelfAttention: true}, because the replacement is causal and so computes a
 * different function. Requires {@code projectInput} and {@code nHeads * headSize == nOut}. The
 * projection weights have a different layout, so an initialised network gets freshly initialised
 * attention weights (reported).
 */
@AutoService(LayerSparsifier.class)
public class SelfAttentionSparsifier implements LayerSparsifier {

  @Override
  public boolean supports(Layer layer, SparsityConfig config) {
    if (!(layer instanceof SelfAttentionLayer s)
        || config == null
        || config.getAttention() == null
        || !config.getAttention().isReplaceSelfAttention()) {
      return false;
    }
    return s.isProjectInput() && s.getNHeads() * s.getHeadSize() == s.getNOut();
  }

  @Override
  public Map<String, long[]> weightShapes(Layer layer) {
    SelfAttentionLayer s = (SelfAttentionLayer) layer;
    return PluginLayerSparsifier.attentionWeightShapes(s.getNIn(), s.getNOut());
  }

  @Override
  public boolean hasAttention(Layer layer) {
    return true;
  }

  @Override
  public boolean replaceEvenIfDense(Layer layer, SparsityConfig config) {
    return true;
  }

  @Override
  public Layer sparsify(Layer layer, LayerSparsity target, SparsityConfig config) {
    SelfAttentionLayer s = (SelfAttentionLayer) layer;
    CausalSelfAttentionLayer.Builder b =
        new CausalSelfAttentionLayer.Builder()
            .nIn(s.getNIn())
            .nOut(s.getNOut())
            .nHeads(s.getNHeads())
            .attentionPattern(
                target.attentionPattern() == null ? "dense" : target.attentionPattern())
            .blockSize(target.attentionBlockSize());
    if (s.getLayerName() != null) {
      b.name(s.getLayerName());
    }
    if (s.getUpdater() != null) {
      b.updater(s.getUpdater());
    }
    if (s.getBiasUpdater() != null) {
      b.biasUpdater(s.getBiasUpdater());
    }
    if (s.getWeightInit() != null) {
      b.weightInit(s.getWeightInit());
    }
    if (target.sparseWeights()) {
      b.projectionPattern(target.pattern()).projectionDensity(target.density());
      if (target.packed()) {
        Map<String, int[]> l = target.layouts();
        b.projectionStorage("packed")
            .projectionLayouts(new int[][] {l.get("Wq"), l.get("Wk"), l.get("Wv"), l.get("Wo")});
      }
    }
    CausalSelfAttentionLayer out = b.build();
    fillGlobalDefaults(out, s);
    return out;
  }

  /**
   * A layer built here is put into an already-built configuration, so DL4J's global-default pass
   * ({@code NeuralNetConfiguration.Builder.configureLayer}) never sees it and the builder's NaN /
   * null placeholders would stay: NaN biases made the first fit fail with "q contains NaN". Fills
   * them with the source layer's settings where it has them, else DL4J's global defaults (bias 0,
   * gain 1, Xavier, no gradient normalisation, threshold 1).
   */
  static void fillGlobalDefaults(CausalSelfAttentionLayer out, SelfAttentionLayer s) {
    if (Double.isNaN(out.getBiasInit())) {
      out.setBiasInit(0.0);
    }
    if (Double.isNaN(out.getGainInit())) {
      out.setGainInit(1.0);
    }
    if (out.getWeightInitFn() == null) {
      out.setWeightInitFn(WeightInit.XAVIER.getWeightInitFunction());
    }
    if (out.getGradientNormalization() == null) {
      out.setGradientNormalization(
          s.getGradientNormalization() == null
              ? GradientNormalization.None
              : s.getGradientNormalization());
    }
    if (Double.isNaN(out.getGradientNormalizationThreshold())) {
      double t = s.getGradientNormalizationThreshold();
      out.setGradientNormalizationThreshold(Double.isNaN(t) || t == 0 ? 1.0 : t);
    }
    if ((out.getRegularization() == null || out.getRegularization().isEmpty())
        && s.getRegularization() != null) {
      out.setRegularization(new ArrayList<>(s.getRegularization()));
    }
    if ((out.getRegularizationBias() == null || out.getRegularizationBias().isEmpty())
        && s.getRegularizationBias() != null) {
      out.setRegularizationBias(new ArrayList<>(s.getRegularizationBias()));
    }
  }
}
