package org.sparseflow.dataflow.cluster;

import java.util.Locale;
import org.sparseflow.dataflow.hw.ClusterSpec;
import org.sparseflow.dataflow.hw.GpuSpec;

/**
 * Analytical time of one training iteration of a GPT model with tensor, pipeline and data
 * parallelism on a GPU cluster (Megatron-LM PTD-P, Narayanan et al., SC21).
 *
 * <ul>
 *   <li>GEMMs: roofline per GEMM, {@code max(flops / (peak x trainingGemmEfficiency x waveQ), bytes
 *       / (HBM x memoryEfficiency)) + launch}, with wave quantization over the SMs. Backward = 2 x
 *       forward (data and weight gradients). Recompute adds a forward pass (full) or the attention
 *       core (attention).
 *   <li>Elementwise kernels (LayerNorm, fused bias-dropout-add, fused bias-GeLU, fused
 *       scale-mask-softmax, attention dropout, loss): bytes / (HBM x memoryEfficiency).
 *   <li>Tensor parallel: 2 all-reduces of b s h activations per layer forward, 2 backward, 2 more
 *       with full recompute (Megatron-LM, Shoeybi et al. 2019); ring time 2 (n-1)/n bytes / bus
 *       bandwidth.
 *   <li>Pipeline: 1F1B, iteration = (m + (p - 1) / v) x stage time (Narayanan et al., SC21, Sec.
 *       2.2); point-to-point b s h / t bytes per GPU per micro-batch each way (scatter/gather).
 *   <li>Data parallel: ring all-reduce of the gradients; overlapped with the last backward pass
 *       when the configuration says so.
 * </ul>
 */
public final class GpuTrainingModel {
  /**
   * Adam in mixed precision, bytes moved per parameter: read and write fp32 master weight, m and v
   * (24), read the fp16 gradient (2), write the fp16 weight (2).
   */
  static final double ADAM_BYTES_PER_PARAM = 28;

  /** Mixed-precision Adam model state per parameter (Rajbhandari et al., ZeRO, 2019: 16 bytes). */
  static final double STATE_BYTES_PER_PARAM = 16;

  private final ClusterSpec cluster;
  private final GpuSpec gpu;
  private final double memBw;

  public GpuTrainingModel(ClusterSpec cluster) {
    this.cluster = cluster;
    this.gpu = cluster.gpu();
    this.memBw = gpu.memBandwidth() * gpu.memoryEfficiency();
  }

  public ClusterSpec cluster() {
    return cluster;
  }

  /** Validates the configuration (including the memory footprint) and times one iteration. */
  public GpuTrainingResult simulate(TransformerShape m, ParallelConfig c) {
    c.validate(m, c.gpus());
    double memory = memoryPerGpu(m, c);
    if (memory > gpu.memCapacityBytes()) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "impossible memory footprint: %s with %s needs %.1f GB per GPU (model state %.1f GB"
                  + " + activations %.1f GB) > %.0f GB on one %s; use more tensor or pipeline"
                  + " parallelism, a smaller micro-batch or --recompute full",
              m.name(),
              c,
              memory / 1e9,
              stateBytes(m, c) / 1e9,
              (memory - stateBytes(m, c)) / 1e9,
              gpu.memCapacityBytes() / 1e9,
              gpu.name()));
    }
    int t = c.tensor();
    int p = c.pipeline();
    int v = c.virtualStages();
    long tokens = (long) c.microBatch() * m.seq();
    int layersPerStage = m.layers() / p;

    double[] layer = layerTimes(m, c, tokens);
    double gemm = layer[0] * layersPerStage;
    double elem = layer[1] * layersPerStage;
    double tp = layer[2] * layersPerStage;
    // last stage: LM head GEMM (forward + 2 backward) and the loss (softmax + cross-entropy)
    double head = 3 * gemm(tokens, m.hidden(), Math.ceil((double) m.vocab() / t), 1);
    double loss = 8.0 * tokens * Math.ceil((double) m.vocab() / t) / memBw;
    gemm += head;
    elem += loss;
    double p2p = 0;
    if (p > 1) {
      boolean crossNode = t * p > cluster.gpusPerNode();
      double bytes = 2.0 * tokens * m.hidden() / t;
      p2p = 2.0 * v * transfer(bytes, crossNode);
    }
    double stage = gemm + elem + tp + p2p;
    int micro = c.microBatches();
    double bubble = (double) (p - 1) / v * stage;

    double stageParams = stageParams(m, c);
    double gradBytes = stageParams * cluster.gradientBytes();
    int d = c.data();
    boolean dpCross = c.gpus() > cluster.gpusPerNode();
    double dp = allReduce(gradBytes, d, dpCross);
    if (c.overlapDataParallel()) {
      double backward = (gemm + elem + tp) * 2.0 / 3.0;
      dp = Math.max(0, dp - backward);
    }
    if (p > 1) {
      // tied input/output embedding: gradient all-reduce between first and last stage
      dp += allReduce((double) m.vocab() * m.hidden() / t * cluster.gradientBytes(), 2, true);
    }
    double optimizer = stageParams * ADAM_BYTES_PER_PARAM / memBw;
    double iteration = micro * stage + bubble + dp + optimizer;
    double hw = hardwareFlops(m, c);
    return new GpuTrainingResult(
        c,
        cluster.name(),
        iteration,
        stage,
        gemm,
        elem,
        tp,
        p2p,
        bubble,
        dp,
        optimizer,
        memory,
        m.megatronFlops(c.globalBatch()),
        hw,
        m.modelFlops(c.globalBatch()),
        c.gpus(),
        gpu.peakFlops());
  }

  /** [GEMM, elementwise, tensor-parallel comm] seconds of one layer, one micro-batch, one GPU. */
  double[] layerTimes(TransformerShape m, ParallelConfig c, long tokens) {
    int t = c.tensor();
    double h = m.hidden();
    double ffnT = (double) m.ffn() / t;
    int headsT = m.heads() / t;
    long batchHeads = (long) c.microBatch() * headsT;
    double qkv = gemm(tokens, h, 3 * h / t, 1);
    double scores = gemm(m.seq(), m.headDim(), m.seq(), batchHeads);
    double context = gemm(m.seq(), m.seq(), m.headDim(), batchHeads);
    double proj = gemm(tokens, h / t, h, 1);
    double fc1 = gemm(tokens, h, ffnT, 1);
    double fc2 = gemm(tokens, ffnT, h, 1);
    double attnCore = scores + context;
    double fwd = qkv + attnCore + proj + fc1 + fc2;
    double recompute = recomputeShare(c.recompute(), fwd, attnCore);
    double gemmTime = 3 * fwd + recompute;

    double attnElem = 9.0 * batchHeads * m.seq() * (double) m.seq();
    double restElem = 22.0 * tokens * h + 4.0 * tokens * ffnT;
    double elemFwd = attnElem + restElem;
    double elemRecompute = recomputeShare(c.recompute(), elemFwd, attnElem);
    double elemTime = (3 * elemFwd + elemRecompute) / memBw + 21 * gpu.launchOverheadSeconds();

    double tpTime = 0;
    if (t > 1) {
      int count = 4 + (c.recompute().equals("full") ? 2 : 0);
      tpTime = count * allReduce(2.0 * tokens * h, t, t > cluster.gpusPerNode());
    }
    return new double[] {gemmTime, elemTime, tpTime};
  }

  private static double recomputeShare(String policy, double full, double attention) {
    switch (policy) {
      case "full":
        return full;
      case "attention":
        return attention;
      default:
        return 0;
    }
  }

  /** Roofline time of a (batched) bf16 GEMM [M x K] x [K x N], with wave quantization. */
  double gemm(double mDim, double kDim, double nDim, long batch) {
    double flops = 2.0 * mDim * kDim * nDim * batch;
    double bytes = 2.0 * (mDim * kDim + kDim * nDim + mDim * nDim) * batch;
    double tiles =
        Math.ceil(mDim / cluster.gemmTileM()) * Math.ceil(nDim / cluster.gemmTileN()) * batch;
    double waves = Math.ceil(tiles / cluster.streamingMultiprocessors());
    double quant = tiles / (waves * cluster.streamingMultiprocessors());
    double compute = flops / (gpu.peakFlops() * cluster.trainingGemmEfficiency() * quant);
    return Math.max(compute, bytes / memBw) + gpu.launchOverheadSeconds();
  }

  /** Ring all-reduce of {@code bytes} over n GPUs: 2 (n - 1) / n x bytes / bus bandwidth. */
  double allReduce(double bytes, int n, boolean crossNode) {
    if (n <= 1) {
      return 0;
    }
    double bw = crossNode ? cluster.interNodeBandwidth() : cluster.intraNodeBusBandwidth();
    double lat = crossNode ? cluster.interNodeLatencySeconds() : cluster.intraNodeLatencySeconds();
    return 2.0 * (n - 1) / n * bytes / bw + lat;
  }

  private double transfer(double bytes, boolean crossNode) {
    double bw = crossNode ? cluster.interNodeBandwidth() : cluster.intraNodeBusBandwidth();
    double lat = crossNode ? cluster.interNodeLatencySeconds() : cluster.intraNodeLatencySeconds();
    return bytes / bw + lat;
  }

  /** Parameters held by one GPU of the first stage (layers + embedding, split by t). */
  static double stageParams(TransformerShape m, ParallelConfig c) {
    return (m.layerParams() * m.layers() / c.pipeline() + (double) m.vocab() * m.hidden())
        / c.tensor();
  }

  static double stateBytes(TransformerShape m, ParallelConfig c) {
    return stageParams(m, c) * STATE_BYTES_PER_PARAM;
  }

  /**
   * Model state plus activations on the first pipeline stage. Activations per layer and micro-batch
   * follow Korthikanti et al. 2022 (arXiv 2205.05198, Sec. 4, no sequence parallelism): {@code s b
   * h (10 + 24/t + 5 a s / (h t))} bytes; selective (attention) recompute drops the last term; full
   * recompute keeps only the layer input (2 s b h) plus one layer's working set. The first stage
   * holds min(m, p) micro-batches in flight (1F1B).
   */
  public static double memoryPerGpu(TransformerShape m, ParallelConfig c) {
    double sbh = (double) m.seq() * c.microBatch() * m.hidden();
    int t = c.tensor();
    double fullLayer =
        sbh * (10 + 24.0 / t + 5.0 * m.heads() * m.seq() / ((double) m.hidden() * t));
    double perLayer;
    switch (c.recompute()) {
      case "full":
        perLayer = 2 * sbh;
        break;
      case "attention":
        perLayer = sbh * (10 + 24.0 / t);
        break;
      default:
        perLayer = fullLayer;
    }
    int inFlight = Math.min(c.microBatches(), c.pipeline());
    double act = perLayer * (m.layers() / c.pipeline()) * inFlight;
    if (c.recompute().equals("full")) {
      act += fullLayer;
    }
    if (c.pipeline() == 1) {
      // logits in fp32 for the loss live on the same GPU
      act += 4.0 * m.seq() * c.microBatch() * Math.ceil((double) m.vocab() / t);
    }
    return stateBytes(m, c) + act;
  }

  /** FLOPs the GPUs execute per iteration (forward, backward, recompute, LM head). */
  static double hardwareFlops(TransformerShape m, ParallelConfig c) {
    double tokens = (double) c.globalBatch() * m.seq();
    double h = m.hidden();
    double linear = 2 * tokens * m.layerParams() * m.layers();
    double attn = 4 * tokens * m.seq() * h * m.layers();
    double head = 2 * tokens * h * m.vocab();
    double passes;
    double extra;
    switch (c.recompute()) {
      case "full":
        passes = 4;
        extra = 0;
        break;
      case "attention":
        passes = 3;
        extra = attn;
        break;
      default:
        passes = 3;
        extra = 0;
    }
    return passes * (linear + attn) + extra + 3 * head;
  }
}
