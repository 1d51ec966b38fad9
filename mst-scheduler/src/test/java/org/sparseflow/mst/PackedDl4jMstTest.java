package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.util.ModelSerializer;
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
import org.sparseflow.layers.nn.SparseDenseLayer;
import org.sparseflow.layers.nn.SparseOutputLayer;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.Phase;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.SparseMask;

/**
 * MST on DL4J layers in packed storage: the layouts follow MST's masks by index, each weight holds
 * its phase's largest block count (a rebuilt network when a phase wants other slots), and the run
 * tracks a masked run of the same model step for step, also across a save and resume.
 */
class PackedDl4jMstTest {

  static final int STEPS = 40;
  static final List<String> WEIGHTS = List.of("0_W", "1_W");

  /** Warm-up to step 12, ultra to 28, restoration to 36 (density 0.2 -> 0.4); ΔT = 4. */
  static MstConfig config(boolean sparseStart) {
    MstConfig c = Dl4jListenerTest.config(STEPS);
    c.setPattern("block8");
    c.setInclude(WEIGHTS);
    c.setDeltaT(4);
    c.setGrowMode("gradient");
    return sparseStart ? c.withSparseStart() : c;
  }

  /** x [8, 32] -> 64 (tanh) -> 16, MSE; both weights block8; layouts null for masked storage. */
  static MultiLayerNetwork mlp(String storage, double density, int[][] layouts) {
    return mlp(storage, storage, density, layouts);
  }

  /** As {@link #mlp(String, double, int[][])} with a storage per layer. */
  static MultiLayerNetwork mlp(
      String hiddenStorage, String outputStorage, double density, int[][] layouts) {
    SparseDenseLayer.Builder h =
        new SparseDenseLayer.Builder()
            .nIn(32)
            .nOut(64)
            .pattern("block8")
            .density(density)
            .storage(hiddenStorage)
            .activation(Activation.TANH);
    SparseOutputLayer.Builder o =
        new SparseOutputLayer.Builder(LossFunctions.LossFunction.MSE)
            .nIn(64)
            .nOut(16)
            .pattern("block8")
            .density(density)
            .storage(outputStorage)
            .activation(Activation.IDENTITY);
    if (layouts != null) {
      h.blockLayout(layouts[0]);
      o.blockLayout(layouts[1]);
    }
    MultiLayerNetwork n =
        new MultiLayerNetwork(
            new NeuralNetConfiguration.Builder()
                .seed(7)
                .dataType(DataType.DOUBLE)
                .updater(new Adam(1e-2))
                .list()
                .layer(h.build())
                .layer(o.build())
                .build());
    n.init();
    return n;
  }

  /**
   * A packed twin of a masked net, both at MST's first masks from the first step on (the masked
   * net's mask param is set to them): the twin's layouts are those masks, its values the masked
   * net's inside them.
   */
  static MultiLayerNetwork packedTwin(MultiLayerNetwork masked, MstConfig c) {
    Map<String, SparseMask> first = MstListener.firstMasks(c, masked);
    int[][] layouts = new int[2][];
    for (int i = 0; i < 2; i++) {
      layouts[i] = PackedLayout.of((BlockMask) first.get(WEIGHTS.get(i))).keptRowMajor();
    }
    MultiLayerNetwork p = mlp("packed", 1.0, layouts);
    List<PackedSparseParam> packed = SparseParams.findPacked(p);
    List<SparseParam> m = SparseParams.find(masked);
    for (int i = 0; i < 2; i++) {
      m.get(i).setMask(first.get(WEIGHTS.get(i))); // both runs start at MST's first masks
      packed.get(i).setDenseWeight(m.get(i).weight());
      p.setParam(i + "_b", masked.getParam(i + "_b"));
    }
    return p;
  }

  static List<DataSet> data() {
    Nd4j.getRandom().setSeed(9);
    INDArray teacher = Nd4j.randn(DataType.DOUBLE, 32, 16).muli(0.3);
    List<DataSet> out = new ArrayList<>();
    for (int i = 0; i < STEPS; i++) {
      INDArray x = Nd4j.randn(DataType.DOUBLE, 8, 32);
      out.add(new DataSet(x, x.mmul(teacher)));
    }
    return out;
  }

  static PackedLayout layoutOf(LayerMask m) {
    return PackedLayout.of(m.rows(), m.cols(), 8, m.activeBits().stream().toArray());
  }

  /** Trains masked and packed twins side by side and checks them after every step. */
  private static void tracksTheMaskedRun(boolean sparseStart) {
    List<DataSet> d = data();
    MultiLayerNetwork masked = mlp("masked", 0.5, null);
    MultiLayerNetwork packed = packedTwin(masked, config(sparseStart));
    MstListener mm = new MstListener(config(sparseStart));
    MstListener mp = new MstListener(config(sparseStart));
    masked.setListeners(mm);
    packed.setListeners(mp);
    int[] slots = new int[2];
    int rebuilds = 0;
    Phase phase = null;
    for (int t = 0; t < STEPS; t++) {
      LayerMask[] before = new LayerMask[2];
      for (int i = 0; i < 2; i++) {
        before[i] = mp.core().masks().get(WEIGHTS.get(i));
      }
      masked.fit(d.get(t));
      packed.fit(d.get(t));
      assertEquals(masked.score(), packed.score(), 1e-9 * (1 + masked.score()), "step " + t);
      MultiLayerNetwork next = (MultiLayerNetwork) mp.nextModel(packed);
      if (next != packed) {
        rebuilds++;
        assertTrue(next.getListeners().contains(mp), "the listener follows the rebuilt model");
        assertEquals(packed.getIterationCount(), next.getIterationCount());
      }
      packed = next;
      Phase now = mp.core().phase();
      List<PackedSparseParam> ps = SparseParams.findPacked(packed);
      for (int i = 0; i < 2; i++) {
        String w = WEIGHTS.get(i);
        LayerMask m = mp.core().masks().get(w);
        assertEquals(mm.core().masks().get(w), m, "mask of " + w + " at step " + t);
        PackedSparseParam p = ps.get(i);
        PackedLayout l = layoutOf(m);
        assertEquals(l, p.layout(), "layout of " + w + " at step " + t);
        assertTrue(p.slots() >= l.keptBlocks());
        int spare = p.slots() - l.keptBlocks();
        assertEquals(
            0.0,
            PackedBlockLinear.blocks(p.packedValues(), l.keptBlocks(), spare, 8)
                .norm1Number()
                .doubleValue(),
            "spare slots of " + w);
        if (slots[i] != 0 && slots[i] != p.slots()) {
          assertTrue(now != phase, w + " resized at step " + t + " inside phase " + now);
        }
        slots[i] = p.slots();
        // blocks grown at this step start at zero
        if (before[i] != null) {
          for (int unit : m.activeBits().stream().toArray()) {
            if (!before[i].isUnitActive(unit) && t % 4 == 3) {
              assertEquals(
                  0.0,
                  PackedBlockLinear.block(p.packedValues(), l.slotOf(unit), 8)
                      .norm1Number()
                      .doubleValue());
            }
          }
        }
        assertTrue(
            SparseParams.find(masked)
                .get(i)
                .weight()
                .equalsWithEps(
                    p.denseWeight(), 1e-8 * (1 + p.denseWeight().amaxNumber().doubleValue())),
            "weights of " + w + " at step " + t);
      }
      phase = now;
    }
    assertTrue(mp.core().topologyUpdates() >= 8, "updates " + mp.core().topologyUpdates());
    assertTrue(rebuilds >= 1, "a phase that wants more blocks rebuilds the model: " + rebuilds);
    assertTrue(mp.core().masks().get("0_W").density() > 0.3, "restoration ends denser");
  }

  @Test
  void aSparseStartTracksTheMaskedRunAndResizesAtPhaseBoundaries() {
    tracksTheMaskedRun(true);
  }

  @Test
  void aDenseWarmUpFromAllBlocksTracksTheMaskedRunAndShrinksAfterIt() {
    MultiLayerNetwork all = mlp("packed", 1.0, null);
    long dense = all.numParams();
    tracksTheMaskedRun(false);
    // the warm-up runs on every block; the ultra phase then wants far fewer slots
    MultiLayerNetwork net = mlp("packed", 1.0, null);
    MstListener mst = new MstListener(config(false));
    net.setListeners(mst);
    List<DataSet> d = data();
    long least = dense;
    for (int t = 0; t < 20; t++) {
      net.fit(d.get(t));
      net = (MultiLayerNetwork) mst.nextModel(net);
      least = Math.min(least, net.numParams());
    }
    assertTrue(least < 0.5 * dense, "params " + least + " of " + dense + " in the ultra phase");
  }

  @Test
  void trainingOnWithoutTheRebuildIsRefusedNamingTheWeightAndTheCall() {
    List<DataSet> d = data();
    MultiLayerNetwork net = packedTwin(mlp("masked", 0.5, null), config(true));
    net.setListeners(new MstListener(config(true)));
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> {
              for (int t = 0; t < STEPS; t++) {
                net.fit(d.get(t));
              }
            });
    assertTrue(e.getMessage().contains("nextModel"), e.getMessage());
    assertTrue(e.getMessage().contains("block slots"), e.getMessage());
  }

  @Test
  void trainingTheModelMstReplacedIsRefused() {
    List<DataSet> d = data();
    MultiLayerNetwork net = packedTwin(mlp("masked", 0.5, null), config(true));
    MstListener mst = new MstListener(config(true));
    net.setListeners(mst);
    MultiLayerNetwork old = net;
    int t = 0;
    while (net == old) {
      net.fit(d.get(t++));
      net = (MultiLayerNetwork) mst.nextModel(net);
    }
    RuntimeException e = assertThrows(RuntimeException.class, () -> old.fit(d.get(0)));
    Throwable c = e;
    while (c.getCause() != null && !c.getMessage().contains("nextModel returned")) {
      c = c.getCause();
    }
    assertTrue(c.getMessage().contains("nextModel returned"), e.toString());
  }

  @Test
  void saveLoadResumeContinuesIdentically() throws Exception {
    List<DataSet> d = data();
    MultiLayerNetwork a = packedTwin(mlp("masked", 0.5, null), config(true));
    MstListener ma = new MstListener(config(true));
    a.setListeners(ma);
    for (int t = 0; t < STEPS; t++) {
      a.fit(d.get(t));
      a = (MultiLayerNetwork) ma.nextModel(a);
    }
    int split = 30; // inside restoration, after its rebuild
    MultiLayerNetwork b = packedTwin(mlp("masked", 0.5, null), config(true));
    MstListener mb = new MstListener(config(true));
    b.setListeners(mb);
    for (int t = 0; t < split; t++) {
      b.fit(d.get(t));
      b = (MultiLayerNetwork) mb.nextModel(b);
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    ModelSerializer.writeModel(b, bytes, true);
    String state = mb.state().toJson();
    MultiLayerNetwork c =
        ModelSerializer.restoreMultiLayerNetwork(
            new ByteArrayInputStream(bytes.toByteArray()), true);
    assertEquals(b.numParams(), c.numParams(), "the file keeps the slots");
    MstListener mc = MstListener.resume(MstState.fromJson(state));
    c.setListeners(mc);
    assertSame(c, mc.nextModel(c), "a resumed model at its phase's slots needs no rebuild");
    for (int t = split; t < STEPS; t++) {
      c.fit(d.get(t));
      c = (MultiLayerNetwork) mc.nextModel(c);
    }
    assertEquals(ma.core().topologyUpdates(), mc.core().topologyUpdates());
    for (String w : WEIGHTS) {
      assertEquals(ma.core().masks().get(w), mc.core().masks().get(w), "mask of " + w);
    }
    assertTrue(a.params().equalsWithEps(c.params(), 1e-12), "values after the resume");
  }

  @Test
  void packedAndMaskedWeightsSelectedTogetherAreRefused() {
    MultiLayerNetwork net = mlp("packed", "masked", 1.0, null);
    net.setListeners(new MstListener(config(false)));
    RuntimeException e = assertThrows(RuntimeException.class, () -> net.fit(data().get(0)));
    Throwable t = e;
    while (t.getCause() != null && !t.getMessage().contains("one storage")) {
      t = t.getCause();
    }
    assertTrue(t.getMessage().contains("one storage"), e.toString());
    assertTrue(t.getMessage().contains("0_W") && t.getMessage().contains("1_W"), t.getMessage());
  }
}
