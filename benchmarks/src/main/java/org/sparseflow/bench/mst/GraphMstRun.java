package org.sparseflow.bench.mst;

import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.ops.transforms.Transforms;
import org.sparseflow.examples.data.BatchSampler;
import org.sparseflow.examples.gpt.ComputationGraphGpt;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.layers.sparsify.Sparsify;
import org.sparseflow.mst.MstListener;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.MstCore;
import org.sparseflow.mst.core.UpdateRecord;
import org.sparseflow.mst.report.MstLog;

/** {@code --model graph}: gpt-mini as examples' {@link ComputationGraphGpt}. */
final class GraphMstRun {
  private GraphMstRun() {}

  /**
   * gpt-mini as a DL4J ComputationGraph ({@link ComputationGraphGpt}), where MST's savings are
   * executed: the dense variant is the stock graph (DL4J DenseLayers, attention as one dense causal
   * tile per head); the MST variants swap in the plugin's sparse-capable layers at full density
   * ({@link Sparsify} with a vanishing sparsity, so every block stays; MST sets the masks at step
   * 0) and use a 16-wide attention block layout, so block-sparse weights run the block-sparse GEMM
   * kernels and MST's hybrid attention patterns run the sparse attention kernels. Adam + decoupled
   * weight decay 0.01 (DL4J {@code WeightDecay}, applied after the updater), as AdamW.
   *
   * @param gradClip threshold of {@link ComputationGraphGpt#clipGradients}, 0 = no clipping
   */
  static MstRun train(String variant, RunSetup setup, IUpdater adam, double gradClip)
      throws Exception {
    GptConfig gpt = setup.gpt();
    int steps = setup.steps();
    boolean dense = variant.equals("dense");
    var conf =
        ComputationGraphGpt.configuration(
            gpt, adam.clone(), 0.01, dense ? gpt.context() : MstVariants.ATTENTION_BLOCK);
    if (gradClip > 0) {
      ComputationGraphGpt.clipGradients(conf, gradClip);
    }
    ComputationGraph net = new ComputationGraph(conf);
    net.init();
    MstConfig cfg = MstVariants.configFor(setup.base(), variant, steps, true);
    cfg.setSeed(setup.seed());
    MstListener mst = null;
    MstCore denseCount = null;
    if (dense) {
      // no listener on the dense baseline: its wall clock is the stock graph's; FLOPs are counted
      // alone
      denseCount = MstVariants.projectedCore(setup.base(), "dense", gpt, steps, true);
    } else {
      // sparse-capable layers with every block kept; MST owns the masks from step 0
      net = Sparsify.apply(MstVariants.graphSparsity(variant, 1e-6), net).model();
      mst =
          new MstListener(cfg)
              .flopCounter(MstVariants.flopCounter(gpt, true), Map.of(), gpt.context());
      net.setListeners(mst);
    }
    BatchSampler sampler =
        new BatchSampler(setup.split().train(), MstVariants.BATCH, gpt.context(), setup.seed());
    EvalCurve curve = new EvalCurve(steps, setup.evalPoints());
    long trainNanos = 0;
    List<UpdateRecord> records = List.of();
    MstLog log = dense ? null : new MstLog(setup.out().resolve("graph-" + variant + ".jsonl"));
    try {
      if (log != null) {
        mst.onUpdate(log);
      }
      for (int step = 0; step < steps; step++) {
        MultiDataSet batch = ComputationGraphGpt.batch(sampler.windows(step), gpt.vocab());
        long t0 = System.nanoTime();
        net.fit(batch);
        trainNanos += System.nanoTime() - t0;
        if (curve.due(step)) {
          double vl = validationLoss(net, setup.evalBatches(), gpt.vocab());
          curve.add(
              "graph " + variant,
              step,
              dense
                  ? denseCount.cumulativeFlops() * (step + 1) / steps
                  : mst.core().cumulativeFlops(),
              vl,
              dense ? 1.0 : mst.core().snapshotRecord().globalDensity,
              dense ? "dense" : mst.core().attentionPatterns(step + 1).get(0),
              trainNanos);
        }
      }
      if (log != null) {
        records = log.records();
      }
    } finally {
      if (log != null) {
        log.close();
      }
    }
    return dense
        ? curve.result(variant, denseCount, trainNanos, 0.0, records, cfg)
        : curve.result(
            variant, mst.core(), trainNanos, 100.0 * mst.overheadFraction(), records, cfg);
  }

  /**
   * Mean next-character cross-entropy of the graph GPT over fixed windows (natural log, per token).
   */
  static double validationLoss(ComputationGraph net, int[][][] batches, int vocab) {
    double sum = 0;
    long n = 0;
    for (int[][] b : batches) {
      MultiDataSet ds = ComputationGraphGpt.batch(b, vocab);
      INDArray p = net.output(false, ds.getFeatures())[0]; // softmax, labels' layout
      INDArray picked =
          p.mul(ds.getLabels(0))
              .sum(
                  ComputationGraphGpt.vocabAxis(
                      ComputationGraphGpt.DEFAULT_FORMAT)); // p(target) [B, T]
      sum -= Transforms.log(picked, false).sumNumber().doubleValue();
      n += picked.length();
    }
    return sum / n;
  }
}
