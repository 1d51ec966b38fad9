package org.sparseflow.mst;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.nd4j.autodiff.samediff.SDVariable;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.nd4j.linalg.learning.config.Adam;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.mst.core.Phase;
import org.sparseflow.ops.packed.PackedBlockLinear;
import org.sparseflow.ops.packed.PackedLayout;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.pattern.PatternSpec;
import org.sparseflow.ops.samediff.PackedMatmulBpOp;
import org.sparseflow.ops.samediff.PackedMatmulOp;
import org.sparseflow.ops.samediff.SparseFlowOps;

/**
 * MST on SameDiff weights in packed storage: masks are the ops' layouts and change by index, the
 * arrays hold a phase's largest block count (reallocated only when a phase begins), grown blocks
 * start at zero with zero optimizer state, and save/load/resume continues bit for bit.
 */
class PackedSameDiffMstTest {

  static final int STEPS = 40;
  static final String[] LAYERS = {"w0", "w1"};

  /** in [n, 32] -> packed w0 (32 x 64, block 8) -> tanh -> packed w1 (64 x 16); MSE. */
  static SameDiff packedMlp() {
    Nd4j.getRandom().setSeed(5);
    SameDiff sd = SameDiff.create();
    SDVariable in = sd.placeHolder("in", DataType.FLOAT, -1, 32);
    SDVariable label = sd.placeHolder("label", DataType.FLOAT, -1, 16);
    PackedLayout l0 = PackedLayout.of((BlockMask) PatternSpec.block(8).random(32, 64, 0.25, 3));
    PackedLayout l1 = PackedLayout.of((BlockMask) PatternSpec.block(8).random(64, 16, 0.25, 4));
    SDVariable w0 = sd.var("w0_packed", Nd4j.randn(DataType.FLOAT, l0.packedShape()).muli(0.2));
    SDVariable w1 = sd.var("w1_packed", Nd4j.randn(DataType.FLOAT, l1.packedShape()).muli(0.2));
    SDVariable h = sd.math().tanh(SparseFlowOps.packedMatmul(sd, "h", in, w0, l0, null));
    SDVariable y = SparseFlowOps.packedMatmul(sd, "y", h, w1, l1, null);
    sd.loss().meanSquaredError("loss", label, y, null);
    return withAdam(sd);
  }

  /** Adam 1e-2, features "in", labels "label". */
  static SameDiff withAdam(SameDiff sd) {
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(new Adam(1e-2))
            .dataSetFeatureMapping("in")
            .dataSetLabelMapping("label")
            .build());
    return sd;
  }

  /** Warm-up to step 12, ultra to 28, restoration to 36 (density 0.2 -> 0.4); ΔT = 4. */
  static MstConfig config() {
    MstConfig c = SameDiffListenerTest.config(STEPS);
    c.setPattern("block8");
    c.setInclude(List.of(LAYERS));
    c.setDeltaT(4);
    c.setGrowMode("gradient");
    return c.withTotalSteps(STEPS).withSparseStart();
  }

  static List<DataSet> data() {
    Nd4j.getRandom().setSeed(9);
    INDArray teacher = Nd4j.randn(DataType.FLOAT, 32, 16).muli(0.3);
    List<DataSet> out = new ArrayList<>();
    for (int i = 0; i < STEPS; i++) {
      INDArray x = Nd4j.randn(DataType.FLOAT, 16, 32);
      out.add(new DataSet(x, x.mmul(teacher)));
    }
    return out;
  }

  static List<SameDiff> instances(SameDiff sd) {
    List<SameDiff> out = new ArrayList<>(List.of(sd));
    SameDiff g = sd.getFunction("grad");
    if (g != null) {
      out.add(g);
    }
    return out;
  }

  static PackedLayout layoutOf(LayerMask m) {
    BitSet on = m.activeBits();
    return PackedLayout.of(m.rows(), m.cols(), 8, on.stream().toArray());
  }

  /** Every op reading {@code var}'s packed values (graph and gradient function) has layout l. */
  static void checkOps(SameDiff sd, String var, PackedLayout l) {
    int seen = 0;
    for (SameDiff inst : instances(sd)) {
      for (SameDiffOp op : inst.getOps().values()) {
        List<String> in = op.getInputsToOp();
        if (in == null || in.size() < 2 || !in.get(1).equals(var)) {
          continue;
        }
        if (op.getOp() instanceof PackedMatmulOp m) {
          assertEquals(l, m.layout(), "forward layout of " + var);
          seen++;
        } else if (op.getOp() instanceof PackedMatmulBpOp bp) {
          assertEquals(l, bp.layout(), "backward layout of " + var);
          seen++;
        }
      }
    }
    assertTrue(seen >= 2, "ops of " + var + " found: " + seen);
  }

  static float[] floats(INDArray a) {
    return a.dup('c').data().asFloat();
  }

  @Test
  void layoutsFollowMstCapacityFollowsPhasesGrownBlocksStartAtZero() {
    SameDiff sd = packedMlp();
    MstListener mst = new MstListener(config());
    mst.addTo(sd);
    List<DataSet> d = data();
    Phase phase = null;
    int[] slots = new int[LAYERS.length];
    int reallocations = 0;
    int grownChecked = 0;
    double first = 0;
    double last = 0;
    for (int t = 0; t < STEPS; t++) {
      Map<String, LayerMask> before = Map.copyOf(mst.core().masks());
      sd.fit(d.get(t));
      INDArray out = sd.output(Map.of("in", d.get(0).getFeatures()), "y").get("y");
      double loss = out.squaredDistance(d.get(0).getLabels()) / out.length();
      first = t < 3 ? first + loss / 3 : first;
      last = t >= STEPS - 3 ? last + loss / 3 : last;
      Phase now = mst.core().phase();
      for (int i = 0; i < LAYERS.length; i++) {
        String var = LAYERS[i] + "_packed";
        LayerMask m = mst.core().masks().get(LAYERS[i]);
        PackedLayout l = layoutOf(m);
        checkOps(sd, var, l);
        INDArray values = sd.getArrForVarName(var);
        int cap = (int) (values.length() / 64);
        assertTrue(cap >= l.keptBlocks(), "capacity " + cap + " >= kept " + l.keptBlocks());
        assertTrue(cap <= l.blockRows() * l.blockCols(), "capacity within the layer");
        // spare slots are zero, and the optimizer state has the values' shape
        float[] v = floats(values);
        for (int k = (int) l.packedLength(); k < v.length; k++) {
          assertEquals(0f, v[k], 0f, var + " spare value " + k);
        }
        GradientUpdater<?> u = sd.getUpdaterMap().get(var);
        for (INDArray s : u.getState().values()) {
          assertArrayEquals(values.shape(), s.shape(), "state shape of " + var);
        }
        if (slots[i] != 0 && slots[i] != cap) {
          reallocations++;
          assertTrue(now != phase, var + " reallocated at step " + t + " inside phase " + now);
        }
        slots[i] = cap;
        // blocks grown after this step hold zero values and zero optimizer state
        LayerMask old = before.get(LAYERS[i]);
        if (old != null) {
          for (int unit : m.activeBits().stream().toArray()) {
            if (!old.isUnitActive(unit)) {
              int slot = l.slotOf(unit);
              assertEquals(
                  0.0, PackedBlockLinear.block(values, slot, 8).norm1Number().doubleValue(), 0.0);
              for (INDArray s : u.getState().values()) {
                INDArray st = PackedBlockLinear.block(s.reshape('c', values.shape()), slot, 8);
                assertEquals(0.0, st.norm1Number().doubleValue(), 0.0, "state of grown block");
              }
              grownChecked++;
            }
          }
        }
      }
      phase = now;
    }
    assertTrue(mst.core().topologyUpdates() >= 8, "updates " + mst.core().topologyUpdates());
    assertTrue(grownChecked > 0, "some blocks grew");
    assertTrue(reallocations > 0, "restoration needs more blocks than the ultra phase");
    assertTrue(last < first, "trains: loss " + first + " -> " + last);
    // restoration ends denser than the ultra-sparse phase
    assertTrue(mst.core().masks().get("w0").density() > 0.3);
    // densify unpacks the kept blocks (not the spare slots) into plain weights: same outputs
    Map<String, INDArray> ph = Map.of("in", d.get(0).getFeatures());
    INDArray before = sd.output(ph, "y").get("y");
    assertTrue(
        sd.getArrForVarName("w0_packed").length()
            > layoutOf(mst.core().masks().get("w0")).packedLength(),
        "w0 has spare slots at the end");
    SameDiff dense = Sparsify.densify(sd);
    INDArray w0 = dense.getArrForVarName("w0");
    assertArrayEquals(new long[] {32, 64}, w0.shape());
    INDArray keep =
        Nd4j.create(mst.core().masks().get("w0").toElementMask(), new long[] {32, 64}, 'c');
    assertEquals(
        0.0, w0.mul(keep.rsub(1)).norm1Number().doubleValue(), 0.0, "zero outside MST's mask");
    INDArray after = dense.output(ph, "y").get("y");
    assertTrue(before.equalsWithEps(after, 1e-5), "densified outputs");
  }

  @Test
  void saveLoadResumeContinuesBitIdentically() throws Exception {
    List<DataSet> d = data();
    SameDiff a = packedMlp();
    MstListener ma = new MstListener(config());
    ma.addTo(a);
    for (int t = 0; t < STEPS; t++) {
      a.fit(d.get(t));
    }
    int split = 27; // the reallocation at the restoration boundary happens after the resume
    SameDiff b = packedMlp();
    MstListener mb = new MstListener(config());
    mb.addTo(b);
    for (int t = 0; t < split; t++) {
      b.fit(d.get(t));
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    b.save(bytes, true);
    String state = mb.state().toJson();
    SparseFlowOps.registerAll();
    SameDiff c = SameDiff.load(new ByteArrayInputStream(bytes.toByteArray()), true);
    MstListener mc = MstListener.resume(MstState.fromJson(state));
    mc.addTo(c);
    for (int t = split; t < STEPS; t++) {
      c.fit(d.get(t));
    }
    assertEquals(ma.core().topologyUpdates(), mc.core().topologyUpdates());
    for (String w : LAYERS) {
      assertEquals(ma.core().masks().get(w), mc.core().masks().get(w), "mask of " + w);
      assertArrayEquals(
          floats(a.getArrForVarName(w + "_packed")),
          floats(c.getArrForVarName(w + "_packed")),
          "values of " + w);
      checkOps(c, w + "_packed", layoutOf(mc.core().masks().get(w)));
    }
  }

  @Test
  void aDenseWarmUpOnPackedStorageIsRefusedWithTheWayOut() {
    SameDiff sd = packedMlp();
    MstConfig dense = SameDiffListenerTest.config(STEPS);
    dense.setPattern("block8");
    dense.setInclude(List.of(LAYERS));
    MstListener mst = new MstListener(dense);
    mst.addTo(sd);
    Exception e = assertThrows(RuntimeException.class, () -> sd.fit(data().get(0)));
    Throwable root = e;
    while (!(root instanceof IllegalArgumentException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertTrue(root.getMessage().contains("initialSparsity = 0.5"), root.getMessage());
    assertTrue(root.getMessage().contains("withSparseStart()"), root.getMessage());
    assertTrue(root.getMessage().contains("storage: masked"), root.getMessage());
    assertTrue(root.getMessage().contains("MstListener.firstMasks"), root.getMessage());
  }
}
