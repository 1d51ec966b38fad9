package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.RNNFormat;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.RnnOutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.sparseflow.layers.api.PackedSparseParam;
import org.sparseflow.layers.api.SparseParam;
import org.sparseflow.layers.api.SparseParams;
import org.sparseflow.layers.nn.CausalSelfAttentionLayer;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * MST on the packed projections of a DL4J attention layer in a ComputationGraph: tracks the masked
 * run step for step, with the graph rebuilt when a phase wants other block slots.
 */
class PackedDl4jAttentionMstTest {

  static final int STEPS = 40;
  static final List<String> WEIGHTS = List.of("attn_Wq", "attn_Wk", "attn_Wv", "attn_Wo");

  static MstConfig config() {
    MstConfig c = PackedDl4jMstTest.config(true);
    c.setInclude(WEIGHTS);
    return c;
  }

  /** in [2, 32, 8] -> attention (32 -> 32, 2 heads, projections block8) -> RNN output 4, MSE. */
  static ComputationGraph graph(String storage, int[][] layouts) {
    CausalSelfAttentionLayer.Builder a =
        new CausalSelfAttentionLayer.Builder()
            .nIn(32)
            .nOut(32)
            .nHeads(2)
            .attentionPattern("local:4")
            .blockSize(4)
            .projectionPattern("block8")
            .projectionDensity(0.5)
            .projectionStorage(storage);
    if (layouts != null) {
      a.projectionLayouts(layouts);
    }
    ComputationGraphConfiguration c =
        new NeuralNetConfiguration.Builder()
            .seed(11)
            .dataType(DataType.DOUBLE)
            .updater(new Adam(1e-2))
            .graphBuilder()
            .addInputs("in")
            .setInputTypes(InputType.recurrent(32, 8, RNNFormat.NCW))
            .addLayer("attn", a.build(), "in")
            .addLayer(
                "out",
                new RnnOutputLayer.Builder(LossFunctions.LossFunction.MSE)
                    .activation(Activation.IDENTITY)
                    .nOut(4)
                    .dataFormat(RNNFormat.NCW)
                    .build(),
                "attn")
            .setOutputs("out")
            .build();
    ComputationGraph g = new ComputationGraph(c);
    g.init();
    return g;
  }

  static List<DataSet> data() {
    Nd4j.getRandom().setSeed(4);
    List<DataSet> out = new ArrayList<>();
    for (int i = 0; i < STEPS; i++) {
      out.add(
          new DataSet(Nd4j.randn(DataType.DOUBLE, 2, 32, 8), Nd4j.randn(DataType.DOUBLE, 2, 4, 8)));
    }
    return out;
  }

  @Test
  void packedProjectionsTrackTheMaskedRunThroughGraphRebuilds() {
    ComputationGraph masked = graph("masked", null);
    Map<String, SparseMask> first = MstListener.firstMasks(config(), masked);
    List<SparseParam> mp = SparseParams.find(masked);
    int[][] layouts = new int[4][];
    for (int i = 0; i < 4; i++) {
      mp.get(i).setMask(first.get(WEIGHTS.get(i)));
      layouts[i] = PackedLayout.of((BlockMask) first.get(WEIGHTS.get(i))).keptRowMajor();
    }
    ComputationGraph packed = graph("packed", layouts);
    List<PackedSparseParam> pp = SparseParams.findPacked(packed);
    for (int i = 0; i < 4; i++) {
      pp.get(i).setDenseWeight(mp.get(i).weight());
    }
    for (Map.Entry<String, INDArray> e : packed.paramTable().entrySet()) {
      if (!WEIGHTS.contains(e.getKey())) {
        e.getValue().assign(masked.getParam(e.getKey()));
      }
    }
    MstListener mm = new MstListener(config());
    MstListener mk = new MstListener(config());
    masked.setListeners(mm);
    packed.setListeners(mk);
    List<DataSet> d = data();
    long least = Long.MAX_VALUE;
    long most = 0;
    int rebuilds = 0;
    for (int t = 0; t < STEPS; t++) {
      masked.fit(d.get(t));
      packed.fit(d.get(t));
      assertEquals(masked.score(), packed.score(), 1e-9 * (1 + masked.score()), "step " + t);
      ComputationGraph next = (ComputationGraph) mk.nextModel(packed);
      rebuilds += next != packed ? 1 : 0;
      packed = next;
      least = Math.min(least, packed.numParams());
      most = Math.max(most, packed.numParams());
      List<PackedSparseParam> ps = SparseParams.findPacked(packed);
      for (int i = 0; i < 4; i++) {
        LayerMask m = mk.core().masks().get(WEIGHTS.get(i));
        assertEquals(mm.core().masks().get(WEIGHTS.get(i)), m, WEIGHTS.get(i) + " step " + t);
        PackedLayout l = ps.get(i).layout();
        assertEquals(m.activeBits(), bits(l), "layout of " + WEIGHTS.get(i));
        assertTrue(
            SparseParams.find(masked).get(i).weight().equalsWithEps(ps.get(i).denseWeight(), 1e-8),
            "weights of " + WEIGHTS.get(i) + " at step " + t);
      }
    }
    assertTrue(mk.core().topologyUpdates() >= 8);
    assertTrue(rebuilds >= 1, "rebuilds " + rebuilds);
    assertTrue(most > least, "the slots follow the phases: params " + least + ".." + most);
  }

  private static java.util.BitSet bits(PackedLayout l) {
    java.util.BitSet b = new java.util.BitSet();
    for (int u : l.keptRowMajor()) {
      b.set(u);
    }
    return b;
  }
}
