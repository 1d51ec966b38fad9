package org.sparseflow.cli;

import java.io.PrintWriter;

/**
 * The one-line note that commands which train print when the JVM was started without {@code
 * --add-modules jdk.incubator.vector}: the block-sparse kernels then fall back to per-block BLAS
 * calls, about half as fast on the ops benchmark (docs/benchmarks.md), and an executable jar's
 * manifest cannot add the module itself.
 */
final class VectorKernelsNote {
  private VectorKernelsNote() {}

  /** True when the JDK Vector API module is missing from the boot layer. */
  static boolean moduleMissing() {
    return ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty();
  }

  /** Prints the note to {@code err} when the module is missing. */
  static void printIfOff(PrintWriter err) {
    if (moduleMissing()) {
      err.println(
          "note: the JDK Vector API kernels are off, so sparse layers run on slower BLAS block"
              + " kernels; start java with --add-modules jdk.incubator.vector to use them");
      err.flush();
    }
  }
}
