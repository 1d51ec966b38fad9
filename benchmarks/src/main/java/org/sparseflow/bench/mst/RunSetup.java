package org.sparseflow.bench.mst;

import java.nio.file.Path;
import org.sparseflow.examples.data.TokenSplit;
import org.sparseflow.examples.gpt.GptConfig;
import org.sparseflow.mst.core.MstConfig;

/**
 * What every training run of one MST benchmark invocation shares.
 *
 * @param base the MST preset or file the sparse variants start from
 * @param evalBatches fixed validation windows
 * @param evalPoints number of validation points over the run
 * @param out artefacts directory (JSONL logs)
 * @param seed the run's seed: batch sampling and the MST masks (the model's initialisation takes
 *     the seed of {@code gpt})
 */
record RunSetup(
    MstConfig base,
    GptConfig gpt,
    TokenSplit split,
    int[][][] evalBatches,
    int steps,
    int evalPoints,
    Path out,
    long seed) {}
