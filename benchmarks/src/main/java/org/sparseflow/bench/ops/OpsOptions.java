package org.sparseflow.bench.ops;

import org.sparseflow.bench.HelpOption;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Options of the {@code ops} suite ({@link OpsBenchmark}). */
@Command(
    name = "ops",
    synopsisHeading = "usage: ",
    description = "Times block-sparse matmul and attention against dense; prints RESULT lines.")
final class OpsOptions {

  @Option(names = "--quick", description = "fewer densities and repetitions, attention at T=2048")
  boolean quick;

  @Option(
      names = "--fresh-outputs",
      description =
          "allocate every output anew (first-touch page faults on 8-32 MB per call) instead of"
              + " reusing output memory through an ND4J workspace, as DL4J layers do")
  boolean freshOutputs;

  @Option(
      names = "--settle-ms",
      paramLabel = "MS",
      description =
          "busy-wait before each timed sparse matmul run so that OpenBLAS's worker thread, which"
              + " spins in sched_yield for ~100 ms after a threaded dense GEMM, is asleep"
              + " (default 150; 0 = none)")
  int settleMs = 150;

  @Option(
      names = "--lead-calls",
      paramLabel = "N",
      description =
          "untimed calls of the same case right before each timed matmul call, dense and sparse"
              + " alike, so that every timed call runs back to back as in training (default 1;"
              + " 0 = time the first call after the previous case or the pause)")
  int leadCalls = 1;

  @Mixin HelpOption help;

  /** Throws IllegalArgumentException naming a bad value. */
  void validate() {
    if (settleMs < 0 || settleMs > 10_000) {
      throw new IllegalArgumentException(
          "--settle-ms = " + settleMs + " is not allowed; allowed: 0..10000");
    }
    if (leadCalls < 0 || leadCalls > 10) {
      throw new IllegalArgumentException(
          "--lead-calls = " + leadCalls + " is not allowed; allowed: 0..10");
    }
  }
}
