package org.sparseflow.dataflow.sim;

import java.util.Locale;

/** How the graph runs on a dataflow chip. */
public enum ExecutionMode {
  /**
   * Fused kernels packed into sections; stages inside a section pipeline tiles through on-chip
   * buffers.
   */
  DATAFLOW("dataflow"),
  /** Every op its own kernel; every intermediate goes through off-chip memory. */
  KERNEL_BY_KERNEL("kernel-by-kernel");

  private final String label;

  ExecutionMode(String label) {
    this.label = label;
  }

  public String label() {
    return label;
  }

  public static ExecutionMode parse(String s) {
    String k = s == null ? "" : s.toLowerCase(Locale.ROOT);
    if (k.equals("dataflow") || k.equals("df")) {
      return DATAFLOW;
    }
    if (k.equals("kernel-by-kernel") || k.equals("kbk")) {
      return KERNEL_BY_KERNEL;
    }
    throw new IllegalArgumentException(
        "mode '" + s + "' is unknown; allowed: dataflow, kernel-by-kernel");
  }
}
