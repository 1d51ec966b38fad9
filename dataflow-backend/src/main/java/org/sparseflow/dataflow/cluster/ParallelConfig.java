package org.sparseflow.dataflow.cluster;

import java.util.Locale;
import java.util.Set;

/**
 * How a model is spread over GPUs: tensor (t), pipeline (p) and data (d) parallel degrees,
 * micro-batch, global batch, interleaved pipeline chunks per GPU (v), activation recompute, and
 * whether the data-parallel gradient all-reduce overlaps the backward pass (PyTorch DDP buckets) or
 * runs after it (Megatron "local" DDP of 2021).
 */
public record ParallelConfig(
    int tensor,
    int pipeline,
    int data,
    int microBatch,
    int globalBatch,
    int virtualStages,
    String recompute,
    boolean overlapDataParallel) {

  public static final Set<String> RECOMPUTE = Set.of("none", "attention", "full");

  public int gpus() {
    return tensor * pipeline * data;
  }

  /** Micro-batches each pipeline runs per iteration: B / (b d). */
  public int microBatches() {
    return globalBatch / (microBatch * data);
  }

  /**
   * Checks the configuration against the model and the GPU count; every message names the option,
   * the value and what is allowed.
   */
  public ParallelConfig validate(TransformerShape m, int gpus) {
    positive("tensor parallel degree", tensor);
    positive("pipeline parallel degree", pipeline);
    positive("data parallel degree", data);
    positive("micro-batch", microBatch);
    positive("global batch", globalBatch);
    positive("virtual pipeline stages", virtualStages);
    if (!RECOMPUTE.contains(recompute)) {
      throw new IllegalArgumentException(
          "recompute '" + recompute + "' is not allowed; allowed: none, attention, full");
    }
    if (gpus() != gpus) {
      throw new IllegalArgumentException(
          String.format(
              Locale.ROOT,
              "parallel degrees t=%d x p=%d x d=%d = %d GPUs, but %d GPUs were given; the product"
                  + " must equal the GPU count",
              tensor,
              pipeline,
              data,
              gpus(),
              gpus));
    }
    if (m.heads() % tensor != 0) {
      throw new IllegalArgumentException(
          "tensor parallel degree "
              + tensor
              + " does not divide the "
              + m.heads()
              + " attention heads of "
              + m.name()
              + "; allowed: a divisor of "
              + m.heads());
    }
    if (m.ffn() % tensor != 0) {
      throw new IllegalArgumentException(
          "tensor parallel degree " + tensor + " does not divide the MLP width " + m.ffn());
    }
    if (m.layers() % (pipeline * virtualStages) != 0) {
      throw new IllegalArgumentException(
          "pipeline parallel degree "
              + pipeline
              + " x virtual stages "
              + virtualStages
              + " does not divide the "
              + m.layers()
              + " layers of "
              + m.name());
    }
    if (globalBatch % (microBatch * data) != 0) {
      throw new IllegalArgumentException(
          "global batch "
              + globalBatch
              + " is not a multiple of micro-batch "
              + microBatch
              + " x data parallel degree "
              + data);
    }
    if (virtualStages > 1 && (pipeline == 1 || microBatches() % pipeline != 0)) {
      throw new IllegalArgumentException(
          "interleaved pipeline (virtual stages "
              + virtualStages
              + ") needs pipeline degree > 1 and micro-batches ("
              + microBatches()
              + ") divisible by the pipeline degree "
              + pipeline);
    }
    return this;
  }

  private static void positive(String what, int v) {
    if (v < 1) {
      throw new IllegalArgumentException(what + " must be >= 1, got " + v);
    }
  }

  @Override
  public String toString() {
    return String.format(
        Locale.ROOT,
        "t=%d p=%d d=%d mb=%d B=%d v=%d recompute=%s dp-overlap=%s",
        tensor,
        pipeline,
        data,
        microBatch,
        globalBatch,
        virtualStages,
        recompute,
        overlapDataParallel);
  }
}
