package org.sparseflow.dataflow.cluster;

import java.util.ArrayList;
import java.util.List;

/**
 * Picks the fastest valid parallel configuration for a model on n GPUs, as a practitioner tuning
 * Megatron-LM would: every (t, p, d) with t within a node, every micro-batch in {1, 2, 4, 8}, no
 * interleaving; configurations that do not divide the model or do not fit in memory are skipped.
 */
public final class ParallelSearch {
  private ParallelSearch() {}

  public static GpuTrainingResult best(
      GpuTrainingModel model,
      TransformerShape m,
      int gpus,
      int globalBatch,
      String recompute,
      boolean overlapDataParallel) {
    if (gpus < 1) {
      throw new IllegalArgumentException("GPU count must be >= 1, got " + gpus);
    }
    GpuTrainingResult best = null;
    List<String> rejected = new ArrayList<>();
    for (int t = 1; t <= Math.min(gpus, model.cluster().gpusPerNode()); t++) {
      for (int p = 1; p <= gpus / t; p++) {
        if (gpus % (t * p) != 0) {
          continue;
        }
        int d = gpus / (t * p);
        for (int mb : new int[] {1, 2, 4, 8}) {
          ParallelConfig c =
              new ParallelConfig(t, p, d, mb, globalBatch, 1, recompute, overlapDataParallel);
          GpuTrainingResult r;
          try {
            r = model.simulate(m, c);
          } catch (IllegalArgumentException e) {
            if (rejected.size() < 3) {
              rejected.add(e.getMessage());
            }
            continue;
          }
          if (best == null || r.iterationSeconds() < best.iterationSeconds()) {
            best = r;
          }
        }
      }
    }
    if (best == null) {
      throw new IllegalArgumentException(
          "no parallel configuration of "
              + m.name()
              + " fits "
              + gpus
              + " GPUs of "
              + model.cluster().name()
              + " with global batch "
              + globalBatch
              + " and recompute "
              + recompute
              + "; for example: "
              + rejected);
    }
    return best;
  }
}
