package org.sparseflow.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.sparseflow.bench.dataflow.DataflowBenchmark;
import org.sparseflow.bench.memory.MemoryBenchmark;
import org.sparseflow.bench.memory.MemoryCapDemo;
import org.sparseflow.bench.mst.GraphStepBenchmark;
import org.sparseflow.bench.mst.MstBenchmark;
import org.sparseflow.bench.ops.OpsBenchmark;

/**
 * Entry point of {@code sparseflow-benchmarks.jar}: {@code java -jar sparseflow-benchmarks.jar
 * <suite> [options]}. Each suite prints machine-readable {@code RESULT <suite> <case> key=value
 * ...} lines.
 */
public final class BenchmarksMain {

  /** A suite's entry point: its {@code main(String[])}. */
  @FunctionalInterface
  private interface Suite {
    void run(String[] args) throws Exception;
  }

  /** Suite name -> entry point. */
  private static final Map<String, Suite> SUITES = new LinkedHashMap<>();

  static {
    SUITES.put("ops", OpsBenchmark::main);
    SUITES.put("mst", MstBenchmark::main);
    SUITES.put("dataflow", DataflowBenchmark::main);
    SUITES.put("graph-step", GraphStepBenchmark::main);
    SUITES.put("memory", MemoryBenchmark::main);
    SUITES.put("memory-cap", MemoryCapDemo::main);
  }

  private BenchmarksMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h")) {
      System.out.println(
          "usage: java -jar sparseflow-benchmarks.jar <suite> [--quick] [suite options]");
      System.out.println("suites: " + String.join(", ", SUITES.keySet()));
      System.exit(args.length == 0 ? 2 : 0);
    }
    Suite suite = SUITES.get(args[0]);
    if (suite == null) {
      System.err.println(
          "error: unknown suite '" + args[0] + "'; allowed: " + String.join(", ", SUITES.keySet()));
      System.exit(2);
    }
    suite.run(Arrays.copyOfRange(args, 1, args.length));
  }
}
