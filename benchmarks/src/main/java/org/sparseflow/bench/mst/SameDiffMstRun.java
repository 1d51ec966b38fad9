package org.sparseflow.bench.mst;

import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.autodiff.samediff.SameDiff;
import org.nd4j.autodiff.samediff.TrainingConfig;
import org.nd4j.autodiff.samediff.VariableType;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.IUpdater;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.data.Batches;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.examples.gpt.SameDiffGpt;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.mst.report.MstLog;

/**
 * {@code --model samediff}: gpt-mini as examples' {@link SameDiffGpt}. Its matmuls are dense with
 * masked weights, so the FLOP reduction is a count of the FLOPs sparse kernels would need and the
 * wall-clock speed-up is measured (expected ~1: masks save no time). Hybrid sparse attention is
 * applied as an additive bias on the dense attention scores. AdamW (Adam + decoupled weight decay
 * 0.01).
 */
final class SameDiffMstRun {
  private SameDiffMstRun() {}

  static MstRun train(String variant, RunSetup setup, IUpdater adam) throws Exception {
    return train(variant, setup, adam, false);
  }

  /**
   * As {@link #train(String, RunSetup, IUpdater)}; with {@code executeSparse} an MST variant's
   * graph is first rewritten by {@code Sparsify.apply} into SparseFlow's sparse matmul and sparse
   * attention ops (the variant's pattern; weights restored after the rewrite), which the listener
   * then drives: masks, block layouts, dense dW on growth steps and the attention pattern.
   */
  static MstRun train(String variant, RunSetup setup, IUpdater adam, boolean executeSparse)
      throws Exception {
    GptConfig gpt = setup.gpt();
    int steps = setup.steps();
    SameDiff sd = SameDiffGpt.build(gpt, adam.clone());
    boolean sparseOps = executeSparse && !variant.equals("dense");
    if (sparseOps) {
      Map<String, INDArray> init = new HashMap<>();
      for (var v : sd.variables()) {
        if (v.getVariableType() == VariableType.VARIABLE && v.getArr() != null) {
          init.put(v.name(), v.getArr().dup());
        }
      }
      Sparsify.apply(
          SameDiffStep.sparsity(variant, 0.5, "local:" + MstVariants.ATTENTION_BLOCK), sd);
      init.forEach((k, a) -> sd.getArrForVarName(k).assign(a));
    }
    sd.setTrainingConfig(
        TrainingConfig.builder()
            .updater(adam.clone())
            .weightDecay(0.01, true)
            .dataSetFeatureMapping(SameDiffGpt.INPUT)
            .dataSetLabelMapping(SameDiffGpt.LABEL)
            .build());
    MstConfig cfg = MstVariants.configFor(setup.base(), variant, steps);
    cfg.setSeed(setup.seed());
    INDArray causal = sd.getArrForVarName("causal_bias");
    MstListener mst =
        new MstListener(cfg)
            .flopCounter(MstVariants.flopCounter(gpt, false), Map.of(), gpt.context());
    if (!sparseOps) {
      // SameDiffGpt shares one causal bias across layers: layer 0's pattern is applied to all
      // (on sparse attention ops the listener sets each op's pattern itself)
      mst.attention(
          gpt.layers(),
          (layer, pattern) -> {
            if (layer == 0) {
              causal.assign(patternBias(pattern, gpt.context()));
            }
          });
    }
    List<UpdateRecord> records;
    BatchSampler sampler =
        new BatchSampler(setup.split().train(), MstVariants.BATCH, gpt.context(), setup.seed());
    EvalCurve curve = new EvalCurve(steps, setup.evalPoints());
    long trainNanos = 0;
    try (MstLog log = new MstLog(setup.out().resolve(variant + ".jsonl"))) {
      mst.onUpdate(log);
      mst.addTo(sd);
      for (int step = 0; step < steps; step++) {
        int[][] w = sampler.windows(step);
        DataSet ds =
            new DataSet(
                Batches.inputIndices(w, DataType.FLOAT), Batches.targetIndices(w, DataType.FLOAT));
        long t0 = System.nanoTime();
        sd.fit(ds);
        trainNanos += System.nanoTime() - t0;
        if (curve.due(step)) {
          double vl = validationLoss(sd, setup.evalBatches());
          curve.add(
              variant,
              step,
              mst.core().cumulativeFlops(),
              vl,
              mst.core().snapshotRecord().globalDensity,
              mst.core().attentionPatterns(step + 1).get(0),
              trainNanos);
        }
      }
      records = log.records();
    }
    if (records.isEmpty()) {
      Files.deleteIfExists(
          setup.out().resolve(variant + ".jsonl")); // dense: no topology updates, no log
    }
    return curve.result(
        variant, mst.core(), trainNanos, 100.0 * mst.overheadFraction(), records, cfg);
  }

  static double validationLoss(SameDiff sd, int[][][] batches) {
    double sum = 0;
    for (int[][] b : batches) {
      Map<String, INDArray> o =
          sd.output(
              Map.of(
                  SameDiffGpt.INPUT,
                  Batches.inputIndices(b, DataType.FLOAT),
                  SameDiffGpt.LABEL,
                  Batches.targetIndices(b, DataType.FLOAT)),
              SameDiffGpt.LOSS);
      sum += o.get(SameDiffGpt.LOSS).meanNumber().doubleValue();
    }
    return sum / batches.length;
  }

  /**
   * Additive attention bias [T, T] for a pattern: 0 where (i, j) is attended, -1e9 elsewhere
   * (always causal). Supports dense, local:W, strided:S, global:N components joined with '+'.
   */
  static INDArray patternBias(String pattern, int t) {
    float[] b = new float[t * t];
    String[] comps = pattern.split("\\+");
    for (int i = 0; i < t; i++) {
      for (int j = 0; j < t; j++) {
        boolean keep = false;
        if (j <= i) {
          for (String c : comps) {
            String[] p = c.trim().split(":");
            keep |=
                switch (p[0]) {
                  case "dense", "all" -> true;
                  case "local" -> i - j < Integer.parseInt(p[1]);
                  case "strided" -> (i - j) % Integer.parseInt(p[1]) == 0;
                  case "global" -> j < Integer.parseInt(p[1]) || i < Integer.parseInt(p[1]);
                  default ->
                      throw new IllegalArgumentException(
                          "attention pattern component = "
                              + c
                              + " is not supported by the SameDiff GPT bias; allowed: dense, local,"
                              + " strided, global");
                };
          }
        }
        b[i * t + j] = keep ? 0f : -1e9f;
      }
    }
    return Nd4j.create(b, new long[] {t, t}, 'c');
  }
}
