package org.sparseflow.bench.mst;

import java.util.List;
import org.sparseflow.mst.core.MstConfig;
import org.sparseflow.mst.core.UpdateRecord;

/**
 * Outcome of one training run of the MST benchmark.
 *
 * @param lossVsFlops [0] cumulative FLOPs and [1] validation loss at each evaluation point
 * @param records the MST update records (empty for dense)
 */
record MstRun(
    String variant,
    double valLoss,
    double flops,
    double denseFlops,
    double trainSeconds,
    double overheadPct,
    double[][] lossVsFlops,
    List<UpdateRecord> records,
    MstConfig config) {}
