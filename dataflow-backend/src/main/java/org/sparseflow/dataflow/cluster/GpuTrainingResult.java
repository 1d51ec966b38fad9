package org.sparseflow.dataflow.cluster;

/**
 * One training iteration of a parallel configuration on a GPU cluster. SIMULATED.
 *
 * @param config the parallel configuration
 * @param cluster cluster name
 * @param iterationSeconds time of one optimizer step (global batch)
 * @param stageMicroBatchSeconds time of one micro-batch (forward + backward) on the slowest stage
 * @param gemmSeconds GEMM share of stageMicroBatchSeconds
 * @param elementwiseSeconds memory-bound share (norms, softmax, dropout, GeLU, loss)
 * @param tensorParallelSeconds tensor-parallel all-reduces per micro-batch on the slowest stage
 * @param pipelineP2pSeconds pipeline send/receive per micro-batch on the slowest stage
 * @param bubbleSeconds pipeline fill and drain per iteration ((p - 1) / v stage times)
 * @param dataParallelSeconds exposed gradient all-reduce (and tied-embedding all-reduce)
 * @param optimizerSeconds Adam update
 * @param memoryBytesPerGpu model state + activations on the first stage
 * @param megatronFlops FLOPs per iteration as Megatron-LM counts them (eq. 3)
 * @param hardwareFlops FLOPs per iteration the GPUs execute (with this recompute policy)
 * @param modelFlops FLOPs per iteration without recompute (forward + backward)
 * @param gpus GPU count
 * @param peakFlops peak per GPU
 */
public record GpuTrainingResult(
    ParallelConfig config,
    String cluster,
    double iterationSeconds,
    double stageMicroBatchSeconds,
    double gemmSeconds,
    double elementwiseSeconds,
    double tensorParallelSeconds,
    double pipelineP2pSeconds,
    double bubbleSeconds,
    double dataParallelSeconds,
    double optimizerSeconds,
    double memoryBytesPerGpu,
    double megatronFlops,
    double hardwareFlops,
    double modelFlops,
    int gpus,
    double peakFlops) {

  /** Per-GPU throughput in Megatron-LM's accounting (the figure of their Table 1). */
  public double megatronTflopsPerGpu() {
    return megatronFlops / iterationSeconds / gpus / 1e12;
  }

  /** Per-GPU throughput of model FLOPs (forward + backward, recompute not counted). */
  public double modelTflopsPerGpu() {
    return modelFlops / iterationSeconds / gpus / 1e12;
  }

  /** Model FLOPs utilisation (no recompute counted) over peak. */
  public double modelFlopsUtilisation() {
    return modelFlops / iterationSeconds / gpus / peakFlops;
  }

  /** Executed FLOPs per GPU per second over peak. */
  public double hardwareUtilisation() {
    return hardwareFlops / iterationSeconds / gpus / peakFlops;
  }
}
