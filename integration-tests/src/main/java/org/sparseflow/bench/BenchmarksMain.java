package org.sparseflow.bench;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point of {@code sparseflow-benchmarks.jar}: {@code java -jar sparseflow-benchmarks.jar
 * <suite> [options]}. Each suite prints machine-readable {@code RESULT <suite> <case> key=value
 * ...} lines.
 */
public final class BenchmarksMain {

  /** Suite name -> class with a {@code public static void main(String[])}. */
  private static final Map<String, String> SUITES = new LinkedHashMap<>();

  static {
    SUITES.put("ops", "org.sparseflow.bench.ops.OpsBenchmark");
    SUITES.put("mst", "org.sparseflow.bench.mst.MstBenchmark");
    SUITES.put("dataflow", "org.sparseflow.bench.dataflow.DataflowBenchmark");
    SUITES.put("graph-step", "org.sparseflow.bench.mst.GraphStepBenchmark");
  }

  private BenchmarksMain() {}

  public static void main(String[] args) throws Exception {
    if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h")) {
      System.out.println(
          "usage: java -jar sparseflow-benchmarks.jar <suite> [--quick] [suite options]");
      System.out.println("suites: " + String.join(", ", SUITES.keySet()));
      System.exit(args.length == 0 ? 2 : 0);
    }
    String className = SUITES.get(args[0]);
    if (className == null) {
      System.err.println(
          "error: unknown suite '" + args[0] + "'; allowed: " + String.join(", ", SUITES.keySet()));
      System.exit(2);
    }
    Method main = Class.forName(className).getMethod("main", String[].class);
    try {
      main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception ex ? ex : e;
    }
  }
}
