package org.sparseflow.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.autodiff.listeners.At;
import org.nd4j.autodiff.listeners.BaseListener;
import org.nd4j.autodiff.listeners.Operation;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.autodiff.samediff.internal.SameDiffOp;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.sparseflow.examples.data.Batches;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.config.SparsityConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.LayerMask;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstState;
import org.sparseflow.ops.pattern.BlockMask;
import org.sparseflow.ops.samediff.SparseAttentionBpOp;
import org.sparseflow.ops.samediff.SparseAttentionOp;
import org.sparseflow.ops.samediff.SparseFlowOps;
import org.sparseflow.ops.samediff.SparseMatmulBpOp;
import org.sparseflow.ops.samediff.SparseMatmulOp;

/**
 * MST on a SameDiff GPT rewritten into SparseFlow ops: the listener drives the ops' masks, block
 * layouts, dense-dW switch and attention patterns.
 */
class SparseSameDiffMstTest {

  static final int STEPS = 24;
  static final int VOCAB = 23;
  static final int T = 32;
  static final String WEIGHTS = SameDiffGpt.BLOCK_WEIGHTS;

  static SameDiff sparseGpt() {
    SameDiff sd = SameDiffGpt.build(new GptConfig(VOCAB, 2, 32, 2, T, 7), 3e-3);
    SparsityConfig cfg =
        SparsityConfig.builder()
            .pattern("block16")
            .density(0.5)
            .include(WEIGHTS)
            .keepFirstDense(false)
            .keepLastDense(false)
            .attention("local:16", 16, false)
            .build();
    Sparsify.apply(cfg, sd);
    return sd;
  }

  static MstConfig mst() {
    MstConfig c = MstConfig.preset("mst-gpt-mini-block16");
    c.setInclude(List.of(WEIGHTS));
    c.setDeltaT(4);
    c.setTopologyUpdates(0); // a fixed ΔT, not scaled with the run
    c.setPruneInterval(2);
    return c.withTotalSteps(STEPS);
  }

  static DataSet batch(int step) {
    Random r = new Random(1000 + step);
    int[][] w = new int[4][T + 1];
    for (int[] row : w) {
      for (int i = 0; i < row.length; i++) {
        row[i] = r.nextInt(VOCAB);
      }
    }
    return new DataSet(
        Batches.inputIndices(w, DataType.FLOAT), Batches.targetIndices(w, DataType.FLOAT));
  }

  static List<SameDiffOp> ops(SameDiff sd, Class<?> type) {
    List<SameDiffOp> out = new ArrayList<>();
    for (SameDiffOp op : sd.getOps().values()) {
      if (type.isInstance(op.getOp())) {
        out.add(op);
      }
    }
    return out;
  }

  /** Records, at the start of each step, what the ops of the gradient function will run with. */
  static final class Recorder extends BaseListener {
    final SameDiff graph;
    final List<Boolean> denseDw = new ArrayList<>();
    final List<Map<String, BlockMask>> layouts = new ArrayList<>();
    final List<List<String>> patterns = new ArrayList<>();

    Recorder(SameDiff graph) {
      this.graph = graph;
    }

    @Override
    public boolean isActive(Operation operation) {
      return operation == Operation.TRAINING;
    }

    @Override
    public void iterationStart(SameDiff sd, At at, MultiDataSet data, long etlTimeMs) {
      SameDiff g = graph.getFunction("grad");
      assertNotNull(g, "gradient function");
      Boolean dense = null;
      for (SameDiffOp op : ops(g, SparseMatmulBpOp.class)) {
        boolean d = ((SparseMatmulBpOp) op.getOp()).denseWeightGrad();
        assertTrue(dense == null || dense == d, "all backward ops share the dW switch");
        dense = d;
      }
      denseDw.add(dense);
      Map<String, BlockMask> l = new LinkedHashMap<>();
      for (SameDiffOp op : ops(g, SparseMatmulOp.class)) {
        BlockMask m = ((SparseMatmulOp) op.getOp()).blockLayout();
        assertNotNull(m, "layout of " + op.getName());
        l.put(op.getInputsToOp().get(1), m);
      }
      for (SameDiffOp op : ops(g, SparseMatmulBpOp.class)) {
        assertSame(
            l.get(op.getInputsToOp().get(1)),
            ((SparseMatmulBpOp) op.getOp()).blockLayout(),
            "forward and backward share the layout");
      }
      layouts.add(l);
      List<String> p = new ArrayList<>();
      for (SameDiffOp op : ops(g, SparseAttentionOp.class)) {
        p.add(((SparseAttentionOp) op.getOp()).pattern().toString());
      }
      List<String> bp = new ArrayList<>();
      for (SameDiffOp op : ops(g, SparseAttentionBpOp.class)) {
        bp.add(((SparseAttentionBpOp) op.getOp()).pattern().toString());
      }
      assertEquals(p, bp, "forward and backward attention patterns agree");
      patterns.add(p);
    }
  }

  @Test
  void drivesMasksLayoutsDenseGradientAndAttentionOnlyAtTheirSteps() {
    SameDiff sd = sparseGpt();
    List<SameDiffOp> matmuls = ops(sd, SparseMatmulOp.class);
    assertEquals(12, matmuls.size());
    assertEquals(2, ops(sd, SparseAttentionOp.class).size());
    MstListener mst = new MstListener(mst());
    mst.addTo(sd);
    Recorder rec = new Recorder(sd);
    sd.addListeners(rec);
    for (int step = 0; step < STEPS; step++) {
      sd.fit(batch(step));
      checkMasks(sd, mst);
    }
    int denseSteps = 0;
    int layoutChanges = 0;
    MstConfig cfg = mst();
    for (int t = 0; t < STEPS; t++) {
      boolean want = mst.core().needsDenseGradient(t);
      assertEquals(want, rec.denseDw.get(t), "dense dW at step " + t);
      denseSteps += want ? 1 : 0;
      if (t > 0) {
        for (Map.Entry<String, BlockMask> e : rec.layouts.get(t).entrySet()) {
          BlockMask before = rec.layouts.get(t - 1).get(e.getKey());
          if (before != e.getValue()) {
            assertTrue(
                mst.core().isMaskStep(t - 1),
                "layout of " + e.getKey() + " changed after step " + (t - 1) + ", no mask step");
            layoutChanges++;
          }
        }
      }
      List<String> expected = mst.core().attentionPatterns(t);
      assertEquals(expected, rec.patterns.get(t), "attention patterns at step " + t);
    }
    assertTrue(denseSteps > 0 && denseSteps < STEPS, "dense dW on some steps only: " + denseSteps);
    assertTrue(layoutChanges > 0, "MST changed some layouts");
    assertTrue(cfg.getPruneInterval() > 0);
  }

  static float[] bits(INDArray a) {
    return a.castTo(DataType.FLOAT).dup('c').data().asFloat();
  }

  /** Pruned weights are exactly zero; mask constants and layouts equal MST's masks. */
  static void checkMasks(SameDiff sd, MstListener mst) {
    for (Map.Entry<String, LayerMask> e : mst.core().masks().entrySet()) {
      LayerMask m = e.getValue();
      INDArray mask = sd.getArrForVarName(e.getKey() + "_mask");
      assertNotNull(mask, e.getKey() + "_mask");
      float[] want = m.toElementMask();
      float[] have = mask.castTo(DataType.FLOAT).dup('c').data().asFloat();
      assertArrayEquals(want, have, 0f, "mask constant of " + e.getKey());
      float[] w = sd.getArrForVarName(e.getKey()).castTo(DataType.FLOAT).dup('c').data().asFloat();
      for (int i = 0; i < w.length; i++) {
        if (want[i] == 0f) {
          assertEquals(0f, w[i], 0f, e.getKey() + " pruned element " + i + " is not zero");
        }
      }
      for (SameDiffOp op : ops(sd, SparseMatmulOp.class)) {
        if (op.getInputsToOp().get(1).equals(e.getKey())) {
          BlockMask l = ((SparseMatmulOp) op.getOp()).blockLayout();
          assertEquals(mask, l.toDense(mask.dataType()), "layout of " + e.getKey());
        }
      }
    }
  }

  @Test
  void saveLoadResumeContinuesBitIdentically() throws Exception {
    int split = 10;
    SameDiff a = sparseGpt();
    MstListener ma = new MstListener(mst());
    ma.addTo(a);
    for (int step = 0; step < STEPS; step++) {
      a.fit(batch(step));
    }

    SameDiff b = sparseGpt();
    MstListener mb = new MstListener(mst());
    mb.addTo(b);
    for (int step = 0; step < split; step++) {
      b.fit(batch(step));
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    b.save(bytes, true);
    String state = mb.state().toJson();

    SparseFlowOps.registerAll();
    SameDiff c = SameDiff.load(new ByteArrayInputStream(bytes.toByteArray()), true);
    MstListener mc = MstListener.resume(MstState.fromJson(state));
    mc.addTo(c);
    for (int step = split; step < STEPS; step++) {
      c.fit(batch(step));
    }
    checkMasks(c, mc);
    assertEquals(ma.core().topologyUpdates(), mc.core().topologyUpdates());
    assertEquals(ma.core().cumulativeFlops(), mc.core().cumulativeFlops(), 0.0);
    boolean moved = false;
    SameDiff fresh = sparseGpt();
    for (String w : a.variableMap().keySet()) {
      INDArray wa = a.getArrForVarName(w);
      if (wa == null || !wa.dataType().isFPType() || c.getArrForVarName(w) == null) {
        continue;
      }
      if (ma.core().masks().containsKey(w)) {
        assertEquals(ma.core().masks().get(w), mc.core().masks().get(w), "mask of " + w);
      }
      assertArrayEquals(bits(wa), bits(c.getArrForVarName(w)), "array " + w + " after resume");
      moved |= !Arrays.equals(bits(wa), bits(fresh.getArrForVarName(w)));
    }
    assertTrue(moved);
    assertFalse(ma.core().masks().isEmpty());
  }

  static TrainConfig trainConfig() {
    TrainConfig c = new TrainConfig();
    c.model = "gpt-tiny";
    c.sparsity = "mst-gpt-mini-block16";
    c.mstDeltaT = 3;
    c.steps = 10;
    c.seed = 7;
    c.batchSize = 4;
    c.contextLength = 16;
    c.evalEvery = 5;
    c.evalWindows = 4;
    c.checkpointEvery = 100;
    c.learningRate = 3e-3;
    return c;
  }

  /** The trainer's path: the block preset rewrites the model; interrupt + resume is exact. */
  @Test
  void trainerRunsMstOnSparseOpsAndResumesExactly(@TempDir Path tmp) throws Exception {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer full = Experiments.start(trainConfig(), tmp.resolve("full")).progress(quiet, false, "");
    SameDiff graph = (SameDiff) full.experiment().model().unwrap();
    assertEquals(12, ops(graph, SparseMatmulOp.class).size(), "attention/MLP weights rewritten");
    assertEquals(2, ops(graph, SparseAttentionOp.class).size());
    Trainer.Result a = full.run();
    assertEquals(Trainer.Status.COMPLETED, a.status());
    assertTrue(a.density() < 0.5, "density " + a.density());

    resumesExactly(trainConfig(), a, tmp, 4);
  }

  /**
   * Runs {@code c} into {@code tmp/cut}, stops it after step {@code stopAt}, resumes it, and checks
   * that it ends as the uninterrupted run {@code full} (in {@code tmp/full}) did: the same losses
   * and FLOPs and bit-identical trainable arrays. Returns how many trainable variables matched.
   */
  static int resumesExactly(TrainConfig c, Trainer.Result full, Path tmp, int stopAt)
      throws Exception {
    PrintStream quiet = new PrintStream(OutputStream.nullOutputStream());
    Trainer first = Experiments.start(c, tmp.resolve("cut")).progress(quiet, false, "");
    first.addListener(
        (t, step, rec) -> {
          if (step == stopAt) {
            t.requestStop();
          }
        });
    assertEquals(Trainer.Status.INTERRUPTED, first.run().status());
    Trainer.Result b =
        Experiments.resume(tmp.resolve("cut"), null).progress(quiet, false, "").run();
    assertEquals(Trainer.Status.COMPLETED, b.status());
    assertEquals(full.trainLoss(), b.trainLoss(), 0.0);
    assertEquals(full.valLoss(), b.valLoss(), 0.0);
    assertEquals(full.flops(), b.flops(), 0.0);
    SameDiff sa = load(tmp.resolve("full"));
    SameDiff sb = load(tmp.resolve("cut"));
    int n = 0;
    for (var v : sa.variables()) {
      if (v.getVariableType() == VariableType.VARIABLE) {
        assertArrayEquals(bits(v.getArr()), bits(sb.getArrForVarName(v.name())), v.name());
        n++;
      }
    }
    return n;
  }

  static SameDiff load(Path run) throws Exception {
    SparseFlowOps.registerAll();
    byte[] model = Checkpoint.read(run.resolve(Checkpoint.FILE_NAME)).model();
    return SameDiff.load(new ByteArrayInputStream(model), false);
  }
}
