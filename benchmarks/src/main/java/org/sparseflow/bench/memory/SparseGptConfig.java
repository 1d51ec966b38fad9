package org.sparseflow.bench.memory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.recurrent.TimeDistributed;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.spi.LayerConfigCopier;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.packed.PackedNmLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.NMMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * Turns the MLP layers of the ComputationGraph GPT ({@code h<i>_fc}, {@code h<i>_proj}: DL4J
 * DenseLayers inside TimeDistributed) into {@link SparseDenseLayer}s with a block pattern, in
 * masked or packed storage, keeping every other setting (updater, weight init, activation, bias).
 */
final class SparseGptConfig {
  private SparseGptConfig() {}

  /**
   * Vertex names of the layers that the sparse variants make sparse: the MLP layers (dense or
   * sparse) and the attention layers, in graph order.
   */
  static List<String> sparseLayers(ComputationGraphConfiguration conf) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, GraphVertex> e : conf.getVertices().entrySet()) {
      if (e.getValue() instanceof LayerVertex lv
          && lv.getLayerConf().getLayer() instanceof CausalSelfAttentionLayer) {
        out.add(e.getKey());
      }
      if (e.getValue() instanceof LayerVertex lv
          && lv.getLayerConf().getLayer() instanceof TimeDistributed td
          && (td.getUnderlying() instanceof DenseLayer
              || td.getUnderlying() instanceof SparseDenseLayer)) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /**
   * Replaces the MLP DenseLayers of {@code conf}, in place, by SparseDenseLayers of {@code pattern}
   * (block8..64) keeping {@code density} of the blocks, stored {@code storage} (masked or packed;
   * packed layouts are seeded random, one seed per layer name).
   */
  static ComputationGraphConfiguration sparsify(
      ComputationGraphConfiguration conf,
      String pattern,
      double density,
      String storage,
      long seed) {
    for (String name : sparseLayers(conf)) {
      LayerVertex lv = (LayerVertex) conf.getVertices().get(name);
      if (lv.getLayerConf().getLayer() instanceof CausalSelfAttentionLayer a) {
        sparsifyProjections(a, pattern, density, storage, seed * 31 + name.hashCode());
        continue;
      }
      TimeDistributed td = (TimeDistributed) lv.getLayerConf().getLayer();
      if (!(td.getUnderlying() instanceof DenseLayer d)) {
        continue;
      }
      Map<String, Object> set = new LinkedHashMap<>();
      set.put("pattern", pattern);
      set.put("density", density);
      set.put("hasBias", d.hasBias());
      set.put("storage", storage);
      if (storage.equals("packed")) {
        SparseMask m =
            PatternSpec.parse(pattern)
                .random(d.getNIn(), d.getNOut(), density, seed * 31 + name.hashCode());
        set.put("blockLayout", packedLayout(m));
      }
      td.setUnderlying(LayerConfigCopier.convert(d, SparseDenseLayer.class, set));
    }
    return conf;
  }

  /** Sparse q, k, v, o projections of {@code pattern} and {@code density}, stored as asked. */
  private static void sparsifyProjections(
      CausalSelfAttentionLayer a, String pattern, double density, String storage, long seed) {
    a.setProjectionPattern(pattern);
    a.setProjectionDensity(density);
    a.setProjectionStorage(storage);
    if (storage.equals("packed")) {
      int[][] layouts = new int[4][];
      for (int i = 0; i < 4; i++) {
        layouts[i] =
            packedLayout(
                PatternSpec.parse(pattern).random(a.getNOut(), a.getNOut(), density, seed + i));
      }
      a.setProjectionLayouts(layouts);
    }
  }

  /** The configuration form of a packed layout: kept-block indices or n:m index words. */
  private static int[] packedLayout(SparseMask m) {
    return m instanceof NMMask nm
        ? PackedNmLayout.of(nm).indexWords()
        : PackedLayout.of((BlockMask) m).keptRowMajor();
  }
}
